"""``ufuzz failures``: list a campaign's failures (by key or by cause) and show one in full."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ufuzz.cli.errors import BadInput


def _load(campaign_dir: str, db: str | None):
    from ufuzz.cli.errors import read_error, read_errors
    from ufuzz.corpus.campaign import load_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    try:
        return load_campaign(Path(campaign_dir), db)
    except read_errors() as exc:
        raise read_error(exc) from None


@click.group()
def failures() -> None:
    """Triage: list a campaign's failures, grouped by key or cause; show one with everything needed to file it."""


@failures.command("list")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--by", type=click.Choice(["cause", "key", "class"]), default=None,
              help="One row per cause (one bug, however many failures show it: the unit a developer fixes; the "
                   "table's default), per unique failure (key: every rewording and value apart; --json's default, "
                   "each record naming its cause) or per behaviour class (one behaviour of the system, however "
                   "many facts show it).")
@click.option("--operator", default=None, help="Only this operator's failures.")
@click.option("--kind", default=None, help="Only this failure kind (e.g. deleted_evidence_retrieved).")
@click.option("--stage", "--level", "stage", default=None, help="Only this level (selection, response, ...).")
@click.option("--all", "include_all", is_flag=True,
              help="Also the seeds' baseline failures and the opt-in reader's (not the system's mutant failures).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def failures_list(campaign_dir: str, db: str | None, by: str | None, operator: str | None, kind: str | None,
                  stage: str | None, include_all: bool, as_json: bool) -> None:
    """List a campaign's causes (most unique failures first, each with an example failure to ``show``), or its
    unique failures in discovery order (``--by key``), or its behaviour classes."""
    from ufuzz.reports.failures import baseline_of, failure_rows, group_by_cause, group_by_class, render_list

    data = _load(campaign_dir, db)
    _known_filters(data, operator, kind, stage)
    rows = failure_rows(data, operator=operator, kind=kind, stage=stage, include_all=include_all,
                        baseline=baseline_of(campaign_dir))
    if as_json:  # records of unique failures unless grouped: what scripts reading it have always had
        grouped = {"cause": group_by_cause, "class": group_by_class}.get(by or "key")
        click.echo(json.dumps(grouped(rows) if grouped else rows, indent=2, default=str))
    else:  # a person reads causes first: one bug, however many rewordings and values show it
        click.echo(render_list(rows, by or "cause"))


def _known_filters(data, operator: str | None, kind: str | None, stage: str | None) -> None:
    """A filter value no failure can have is a typo, not an empty list (a walkthrough's ``--kind nosuchkind`` listed
    "0 unique failures", exit 0): bad input naming the option and the values it takes — those this version knows and
    those the campaign recorded (a plugin operator not installed here, a kind of another version)."""
    from ufuzz.operators import registry
    from ufuzz.oracles.verdict import PROBE_KINDS
    from ufuzz.triage.corpusfile import FAILURE_KINDS, STAGES

    try:
        operators: tuple[str, ...] = registry.names(opt_in=True)
    except Exception:  # noqa: BLE001 - a broken operator plugin: what the campaign recorded still filters
        operators = ()
    recorded = data.failures
    for option, attr, value, known in (("--operator", "operator", operator, operators),
                                       ("--kind", "kind", kind, (*FAILURE_KINDS, *PROBE_KINDS)),
                                       ("--level", "stage", stage, STAGES)):
        known = tuple(dict.fromkeys((*known, *sorted({str(getattr(f, attr) or "") for f in recorded} - {""}))))
        if value is not None and value not in known:
            raise click.BadParameter(f"{value!r} is not one of: {', '.join(known)}", param_hint=f"'{option}'")


@failures.command("show")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.argument("key")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (the same as --format json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default=None,
              help="text (default), json, or md: a Markdown ticket (a one-sentence summary, the minimal steps, "
                   "the evidence) to paste into an issue tracker.")
@click.option("--minimised", "minimised_file", default=None, type=click.Path(dir_okay=False),
              help="The one-record corpus `ufuzz minimise` wrote for KEY: the ticket's steps and the reproducer "
                   "use its few memories (default: KEY12.min.jsonl in the campaign dir, if it is there).")
@click.option("--reproducer", default=None, type=click.Path(dir_okay=False),
              help="HTTP backends: write a standalone Python script that replays the failure against the product.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="The product TOML for --reproducer (default: the campaign's).")
def failures_show(campaign_dir: str, key: str, db: str | None, as_json: bool, fmt: str | None,
                  minimised_file: str | None, reproducer: str | None, config_file: str | None) -> None:
    """Show one failure (KEY or a unique prefix): questions, state change, top-k with the system's own ids,
    responses, references, verdict and the commands that reproduce it."""
    from ufuzz.reports.failures import baseline_of, failure_views, render_show

    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json and --format {fmt} ask for two formats: choose one")
    fmt = "json" if as_json else (fmt or "text")
    data = _load(campaign_dir, db)
    try:
        view = failure_views(data, [key], campaign_dir=campaign_dir, db=db, baseline=baseline_of(campaign_dir))[0]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'KEY'") from None
    minimised = _minimised(campaign_dir, view["key"], minimised_file)
    if reproducer:
        path = write_reproducer(data, view["key"], reproducer, config_file, minimised)
        view["commands"]["run reproducer"] = f"python3 {path}"
        if minimised is not None:  # said, not silent (walkthrough): the script is not the campaign's whole case
            click.echo(f"{path}: the minimised case ({len(minimised[1].memories)} memories, from "
                       f"{view['checkpoint_memories']}; --minimised names another file)", err=True)
    if fmt == "md":
        from ufuzz.reports.ticket import render_ticket

        click.echo(render_ticket(view, minimised))
    else:
        click.echo(json.dumps(view, indent=2, default=str) if fmt == "json" else render_show(view))


def _minimised(campaign_dir: str, key: str, path: str | None):
    """(record, checkpoint) of the minimised corpus of failure ``key``, or None when there is none."""
    from ufuzz.triage.corpusfile import CorpusFileError, load_corpus

    file = Path(path) if path else Path(campaign_dir) / f"{key[:12]}.min.jsonl"
    if not file.is_file():
        if path:
            raise click.BadParameter(f"no such file: {path}", param_hint="'--minimised'")
        return None
    try:
        rc = load_corpus(file)
    except CorpusFileError as exc:
        raise click.BadParameter(str(exc), param_hint="'--minimised'") from None
    rec = next((r for r in rc.records if r.failure_key == key), None)
    if rec is None:
        if path:
            raise click.BadParameter(f"{path} holds no record of failure {key}", param_hint="'--minimised'")
        return None
    return rec, rc.checkpoints[rec.checkpoint_id]


def write_reproducer(data, key: str, out: str, config_file: str | None, minimised=None) -> Path:
    from ufuzz.backends.adapters.http import load_config
    from ufuzz.corpus.campaign import case_of
    from ufuzz.oracles.judging import Judging
    from ufuzz.reports.reproducer import http_reproducer, record_reproducer

    if data.backend != "http":
        raise click.UsageError(f"--reproducer needs an HTTP backend campaign (this one ran on {data.backend!r}); "
                               f"`ufuzz replay DIR --key {key[:12]}` reproduces it with ufuzz")
    f = next(x for x in data.failures if x.failure_key == key)
    mutant = case_of(f.case_id, data.checkpoints, data.seeds, data.mutants)
    parent = case_of(mutant.parent_id, data.checkpoints, data.seeds, data.mutants) \
        if not isinstance(mutant, str) and mutant.parent_id else None  # None: a seed's baseline failure
    if isinstance(mutant, str) or isinstance(parent, str):
        raise BadInput(f"failure {key} cannot be rebuilt: {mutant if isinstance(mutant, str) else parent}")
    path = config_file or data.backend_options.get("config")
    try:
        cfg = load_config(str(path), data.backend_options.get("base_url") or None)
    except (ValueError, TypeError) as exc:
        raise BadInput(f"{exc} (pass the product TOML with --config)") from None
    if minimised is not None:
        rec, cp = minimised
        return write_script(record_reproducer(cfg, rec, cp, data.k, judging=Judging.of(data.config),
                                              name=Path(out).name), out)
    src = http_reproducer(cfg, key=key, operator=f.operator or "", kind=f.kind, stage=f.stage,
                          memories=data.checkpoints[mutant.checkpoint_id].memories,
                          parent=(parent.query.text, parent.ops, data.references.get(parent.id)) if parent else None,
                          mutant=(mutant.query.text, mutant.ops, data.references.get(mutant.id)),
                          k=data.k, name=Path(out).name, judging=Judging.of(data.config))
    return write_script(src, out)


def write_script(src: str, out: str | Path) -> Path:
    """Write a reproducer script, executable."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(src, encoding="utf-8")
    target.chmod(0o755)
    return target
