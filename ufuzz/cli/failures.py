"""``ufuzz failures``: list a campaign's failures (by key or by cause) and show one in full."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _load(campaign_dir: str, db: str | None):
    from ufuzz.corpus.campaign import load_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    try:
        return load_campaign(Path(campaign_dir), db)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None


@click.group()
def failures() -> None:
    """Triage: list a campaign's failures, grouped by key or cause; show one with everything needed to file it."""


@failures.command("list")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--by", type=click.Choice(["key", "cause"]), default="key", show_default=True,
              help="One row per unique failure, or per cause (one bug, however many failures show it).")
@click.option("--operator", default=None, help="Only this operator's failures.")
@click.option("--kind", default=None, help="Only this failure kind (e.g. deleted_evidence_retrieved).")
@click.option("--stage", "--level", "stage", default=None, help="Only this level (selection, response, ...).")
@click.option("--all", "include_all", is_flag=True,
              help="Also the seeds' baseline failures and the opt-in reader's (not the system's mutant failures).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def failures_list(campaign_dir: str, db: str | None, by: str, operator: str | None, kind: str | None,
                  stage: str | None, include_all: bool, as_json: bool) -> None:
    """List the unique failures of a campaign in discovery order, or its causes (most failures first)."""
    from ufuzz.reports.failures import baseline_of, failure_rows, group_by_cause, render_list

    data = _load(campaign_dir, db)
    rows = failure_rows(data, operator=operator, kind=kind, stage=stage, include_all=include_all,
                        baseline=baseline_of(campaign_dir))
    if as_json:
        click.echo(json.dumps(group_by_cause(rows) if by == "cause" else rows, indent=2, default=str))
    else:
        click.echo(render_list(rows, by))


@failures.command("show")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.argument("key")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--reproducer", default=None, type=click.Path(dir_okay=False),
              help="HTTP backends: write a standalone Python script that replays the failure against the product.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="The product TOML for --reproducer (default: the campaign's).")
def failures_show(campaign_dir: str, key: str, db: str | None, as_json: bool, reproducer: str | None,
                  config_file: str | None) -> None:
    """Show one failure (KEY or a unique prefix): questions, state change, top-k with the system's own ids,
    responses, references, verdict and the commands that reproduce it."""
    from ufuzz.reports.failures import baseline_of, failure_views, render_show

    data = _load(campaign_dir, db)
    try:
        view = failure_views(data, [key], campaign_dir=campaign_dir, db=db, baseline=baseline_of(campaign_dir))[0]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'KEY'") from None
    if reproducer:
        path = _write_reproducer(data, view["key"], reproducer, config_file)
        view["commands"]["run reproducer"] = f"python3 {path}"
    click.echo(json.dumps(view, indent=2, default=str) if as_json else render_show(view))


def _write_reproducer(data, key: str, out: str, config_file: str | None) -> Path:
    from ufuzz.backends.http import load_config
    from ufuzz.corpus.campaign import case_of
    from ufuzz.reports.reproducer import http_reproducer

    if data.backend != "http":
        raise click.UsageError(f"--reproducer needs an HTTP backend campaign (this one ran on {data.backend!r}); "
                               f"`ufuzz replay DIR --key {key[:12]}` reproduces it with ufuzz")
    f = next(x for x in data.failures if x.failure_key == key)
    mutant = case_of(f.case_id, data.checkpoints, data.seeds, data.mutants)
    parent = case_of(mutant.parent_id, data.checkpoints, data.seeds, data.mutants) \
        if not isinstance(mutant, str) and mutant.parent_id else "no parent"
    if isinstance(mutant, str) or isinstance(parent, str):
        raise click.ClickException(f"failure {key} cannot be rebuilt: {mutant if isinstance(mutant, str) else parent}")
    path = config_file or data.backend_options.get("config")
    try:
        cfg = load_config(str(path), data.backend_options.get("base_url") or None)
    except (ValueError, TypeError) as exc:
        raise click.ClickException(f"{exc} (pass the product TOML with --config)") from None
    src = http_reproducer(cfg, key=key, operator=f.operator or "", kind=f.kind, stage=f.stage,
                          memories=data.checkpoints[mutant.checkpoint_id].memories,
                          parent=(parent.query.text, parent.ops, data.references.get(parent.id)),
                          mutant=(mutant.query.text, mutant.ops, data.references.get(mutant.id)),
                          k=data.k, name=Path(out).name)
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(src, encoding="utf-8")
    target.chmod(0o755)
    return target
