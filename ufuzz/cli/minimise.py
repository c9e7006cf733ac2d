"""``ufuzz minimise``: the smallest checkpoint and op sequence that still show one failure."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.argument("key")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="The one-record regression corpus to write (default: KEY.min.jsonl in the campaign dir).")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--max-tests", type=click.IntRange(min=1), default=1000, show_default=True,
              help="At most this many replays of candidate states (each builds two states on the backend).")
@click.option("--reproducer", default=None, type=click.Path(dir_okay=False),
              help="HTTP backends: also write a standalone Python script that replays the minimised failure "
                   "against the product.")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
              help="Backend option (repeatable; overrides the campaign's, e.g. base_url= of a product restarted "
                   "elsewhere); the minimised record keeps the options it was minimised with.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Backend config file (e.g. the product TOML of --backend http); default: the campaign's.")
def minimise(campaign_dir: str, key: str, output: str | None, db: str | None, max_tests: int,
             reproducer: str | None, opts: tuple[str, ...], config_file: str | None) -> None:
    """Shrink failure KEY (a key or unique prefix) by delta debugging to the fewest memories and state
    operations on which the parent still passes and the mutant still fails the same way, and write it as a
    self-contained regression record that `ufuzz corpus check` replays."""
    from dataclasses import replace

    from ufuzz.backends.protocol import BackendError, BackendUnreachable
    from ufuzz.cli.corpus import _check_options
    from ufuzz.cli.errors import BadInput, Unavailable, read_error, read_errors
    from ufuzz.corpus.campaign import load_campaign
    from ufuzz.triage.minimise import ReplayFault, minimise_failure, write_minimised

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    options = _check_options(opts, config_file)
    try:
        data = load_campaign(Path(campaign_dir), db)
    except read_errors() as exc:
        raise read_error(exc) from None
    if options:
        data = replace(data, backend_options={**data.backend_options, **options})
    try:
        result = minimise_failure(data, key, max_tests=max_tests)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    except BackendUnreachable as exc:
        raise Unavailable(f"the backend is unreachable, nothing was minimised: {exc}") from None
    except ReplayFault as exc:
        raise Unavailable(str(exc)) from None
    except BackendError as exc:
        raise Unavailable(f"cannot start the campaign's backend: {exc}") from None
    out = Path(output or Path(campaign_dir) / f"{result.record.failure_key[:12]}.min.jsonl")
    if reproducer and data.backend != "http":
        raise click.UsageError(f"--reproducer needs an HTTP backend campaign (this one ran on {data.backend!r}); "
                               f"`ufuzz corpus check {out}` replays the minimised record with ufuzz")
    write_minimised(data, result, out)
    r = result.record
    click.echo(f"failure {r.failure_key} ({r.operator}, {r.stage}:{r.kind}): memories {result.memories_before} -> "
               f"{result.memories_after}, state ops {result.ops_before} -> {result.ops_after} "
               f"({result.tests} replays)")
    click.echo(f"wrote {out}; check it with: ufuzz corpus check {out}")
    d, k = campaign_dir, r.failure_key[:12]
    ticket = f"ufuzz failures show {d} {k} --format md" + ("" if output is None else f" --minimised {out}")
    click.echo(f"a ticket with the minimal steps: {ticket}")
    if reproducer:
        from ufuzz.cli.failures import write_reproducer

        path = write_reproducer(data, r.failure_key, reproducer, None, (r, result.checkpoint))
        click.echo(f"wrote the reproducer {path}; run it with: python3 {path}")
