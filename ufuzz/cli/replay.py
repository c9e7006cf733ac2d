"""``ufuzz replay``: re-run a campaign's unique failures on a fresh backend."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--key", "keys", multiple=True, metavar="KEY",
              help="Replay only this failure (a key or a unique prefix, as `ufuzz failures list` shows; repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
              help="Backend option (repeatable; overrides the campaign's, e.g. base_url= of a product restarted "
                   "on another port).")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Backend config file (e.g. the product TOML of --backend http); default: the campaign's.")
def replay(campaign_dir: str, db: str | None, keys: tuple[str, ...], as_json: bool, opts: tuple[str, ...],
           config_file: str | None) -> None:
    """Rebuild every unique failure of a campaign (or those named by --key) on a fresh backend and check that
    it reproduces. Exit 1 when one does not; exit 3, as `ufuzz corpus check`, when the backend cannot be
    started or reached at all (nothing about the failures was learnt)."""
    from ufuzz.backends.protocol import BackendError
    from ufuzz.cli.corpus import _check_options
    from ufuzz.cli.errors import Unavailable, read_error, read_errors
    from ufuzz.reports.replay import render_replay
    from ufuzz.triage.replay import replay_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    options = _check_options(opts, config_file)
    try:
        report = replay_campaign(Path(campaign_dir), db, keys=list(keys) or None, options=options or None)
    except BackendError as exc:
        raise Unavailable(f"cannot start the campaign's backend: {exc}") from None
    except read_errors() as exc:
        raise read_error(exc) from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str))
    elif report.unreachable is None or report.total:
        click.echo(render_replay(report))  # down before any replay: no "0/0 reproduced" table (walkthrough)
    if report.unreachable is not None:
        raise Unavailable(f"the backend is unreachable ({report.unreachable}); {report.not_run} failure(s) not "
                          "replayed")
    if report.reproduced < report.total:
        raise SystemExit(1)
