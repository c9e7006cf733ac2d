"""``ufuzz corpus``: export and check regression corpora; upgrade a run database written by an earlier ufuzz."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ufuzz.cli.errors import Unavailable, read_error, read_errors
from ufuzz.cli.options import backend_options, check_output_file, parse_opts


@click.group()
def corpus() -> None:
    """Regression corpora: export a campaign's unique failures; check that they still reproduce."""


@corpus.command("export")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Corpus file (JSONL) to write.")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--max", "max_records", type=click.IntRange(min=1, max=10**9), default=None,
              help="Keep the first N failures in discovery order (plus one per operator and kind).")
def corpus_export(campaign_dir: str, output: str, db: str | None, max_records: int | None) -> None:
    """Write a campaign's unique failures as a self-contained, replayable regression corpus."""
    from ufuzz.triage.corpusfile import export_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    check_output_file(output)
    try:
        res = export_campaign(Path(campaign_dir), output, db, max_records=max_records)
    except read_errors() as exc:
        raise read_error(exc) from None
    except OSError as exc:
        raise Unavailable(f"cannot write {output}: {exc.strerror or exc}") from None
    ops = ", ".join(f"{op} {n}" for op, n in res.by_operator().items())
    click.echo(f"wrote {len(res.records)} of {res.unique_failures} unique failures over {res.checkpoints} "
               f"checkpoints to {res.path} ({res.size / 1024:.0f} KB): {ops}")
    if res.skipped:
        click.echo(f"  skipped {len(res.skipped)} that cannot be rebuilt, e.g. {res.skipped[0][1]}", err=True)


@corpus.command("upgrade")
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
def corpus_upgrade(campaign_dir: str, db: str | None) -> None:
    """Upgrade a run database written by an earlier ufuzz to this version, in place (every record kept)."""
    from ufuzz.corpus.store import SCHEMA_VERSION, upgrade_database

    path = Path(campaign_dir) / "corpus.sqlite"
    if db is None and not path.is_file():
        raise click.BadParameter(f"no corpus.sqlite in {campaign_dir} (pass --db URL if the corpus is elsewhere)",
                                 param_hint="'CAMPAIGN_DIR'")
    url = db or f"sqlite:///{path.resolve()}"
    try:
        before = upgrade_database(url)
    except read_errors() as exc:
        raise read_error(exc) from None
    click.echo(f"schema version {SCHEMA_VERSION} already" if before is None
               else f"upgraded from schema version {before} to {SCHEMA_VERSION}")


def _check_options(opts: tuple[str, ...], config_file: str | None) -> dict:
    return backend_options(opts, config_file, resolve=True)


def _fail(code: int, message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def _run_check(file: str, backend: str | None, options: dict, cross_backend: bool = False):
    """Load and check the corpus; bad input exits 2, a backend that cannot start or be reached exits 3. A
    corpus is checked on another backend than the one it was recorded on only when asked (``--cross-backend``):
    its failures are that system's, and on another one they would read as fixed — good news that is not."""
    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.triage.check import EXIT_UNREACHABLE, check_corpus
    from ufuzz.triage.corpusfile import CorpusFileError, load_corpus

    try:
        rc = load_corpus(file)
    except CorpusFileError as exc:
        _fail(2, str(exc))
    from ufuzz.backends import registry

    if backend is None and rc.backend not in registry.available():  # the file is at fault, not an option
        _fail(2, f"{file}:{rc.header_line}: unknown backend {rc.backend!r} in the corpus header (field 'backend'); "
              f"known: {', '.join(registry.available())}; pass --backend NAME to replay it on another backend")
    if backend is not None and backend != rc.backend and backend in registry.available() and not cross_backend:
        _fail(2, f"--backend {backend}: {file} was recorded on backend {rc.backend!r}; its failures are that "
              f"system's, and on {backend!r} they would read as fixed. Pass --cross-backend to check it there "
              "anyway")
    try:
        return rc, check_corpus(rc, backend=backend, options=options)
    except KeyError as exc:
        _fail(2, f"--backend: {str(exc.args[0]) if exc.args else exc}")
    except BackendUnavailable as exc:
        _fail(EXIT_UNREACHABLE, str(exc))
    except ValueError as exc:
        _fail(2, f"cannot start backend {backend or rc.backend!r}: {exc}")
    except BackendError as exc:
        _fail(EXIT_UNREACHABLE, f"cannot start backend {backend or rc.backend!r}: {exc}")


_CHECK_OPTIONS = [
    click.option("--backend", default=None, help="Backend to replay on (default: the one recorded in the header)."),
    click.option("--cross-backend", is_flag=True,
                 help="Allow --backend to name another backend than the recorded one (a comparison of two "
                      "systems, not a regression check)."),
    click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
                 help="Backend option (repeatable; overrides the header's options for the recorded backend)."),
    click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
                 help="Backend config file (e.g. the product TOML of --backend http); default: the one recorded "
                      "in the header, relative to the corpus file."),
]


def _with_check_options(fn):
    for opt in reversed(_CHECK_OPTIONS):
        fn = opt(fn)
    return fn


@corpus.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@_with_check_options
@click.option("--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="FILE",
              help="Write the machine-readable report to FILE ('-' or no value: standard output, instead of text).")
@click.option("--junit", "junit_out", default=None, type=click.Path(dir_okay=False),
              help="Write a JUnit XML report for the CI's test view: one timed test case per behaviour, its records "
                   "listed (one that regressed or changed: a failure; known failures that still reproduce: skipped "
                   "with a message; all fixed: passes).")
@click.option("--changed-only", is_flag=True, help="List only the records that did not behave as recorded.")
def corpus_check(file: str, backend: str | None, cross_backend: bool, opts: tuple[str, ...],
                 config_file: str | None, json_out: str | None, junit_out: str | None, changed_only: bool) -> None:
    """Replay every record of a regression corpus on a fresh backend (the nightly CI check).

    Exit status: 0 nothing regressed (known failures still reproduce; fixed ones are reported as good news),
    1 a known failure got worse or changed (fails differently, its parent broke, a backend fault, or a fixed one
    fails again), 2 bad input (malformed file, unknown backend or options), 3 the backend cannot be reached or
    started (nothing was checked).
    """
    from ufuzz.reports.junit import write_junit
    from ufuzz.reports.regression import render_check

    options = _check_options(opts, config_file)
    rc, report = _run_check(file, backend, options, cross_backend)
    if junit_out:
        write_junit(report, junit_out, rc)
    data = json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str)
    if json_out == "-":
        click.echo(data)
    else:
        if json_out:
            Path(json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(json_out).write_text(data + "\n", encoding="utf-8")
        click.echo(render_check(report, all_rows=not changed_only))
    sys.exit(report.exit_code)


@corpus.command("accept")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--from", "from_json", default=None, type=click.Path(dir_okay=False),
              help="The JSON report of a check of FILE (`ufuzz corpus check FILE --json check.json`); "
                   "without it the check runs now.")
@_with_check_options
@click.option("--drop-fixed", is_flag=True, help="Remove fixed failures instead of keeping them as guards.")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Write the updated corpus here (default: update FILE in place).")
def corpus_accept(file: str, from_json: str | None, backend: str | None, cross_backend: bool,
                  opts: tuple[str, ...], config_file: str | None, drop_fixed: bool, output: str | None) -> None:
    """Update a regression corpus to what a check observed (like accepting new snapshots).

    Fixed failures become guards that must keep passing (or are removed with --drop-fixed); changed or
    regressed ones are recorded with the failure they show now; records whose parent broke are removed;
    records that met a backend fault stay as they were. Exit 3 when the backend cannot be reached.
    """
    from ufuzz.triage.check import EXIT_UNREACHABLE, accept_check
    from ufuzz.triage.corpusfile import CorpusFileError, load_corpus, rewrite_corpus

    if from_json is not None:
        try:
            rc = load_corpus(file)
        except CorpusFileError as exc:
            _fail(2, str(exc))
        try:
            data = json.loads(Path(from_json).read_text(encoding="utf-8"))
            results, unreachable = data["results"], data.get("unreachable")
        except FileNotFoundError:
            _fail(2, f"--from: no such file: {from_json}")
        except (ValueError, KeyError, TypeError):
            _fail(2, f"--from: {from_json} is not the JSON report of `ufuzz corpus check`")
    else:
        rc, report = _run_check(file, backend, _check_options(opts, config_file), cross_backend)
        results, unreachable = report.results, report.unreachable
    if unreachable:
        _fail(EXIT_UNREACHABLE, f"the check did not reach the backend ({unreachable}); nothing accepted")
    try:
        acc = accept_check(rc, results, drop_fixed=drop_fixed)
    except ValueError as exc:
        _fail(2, str(exc))
    path = rewrite_corpus(rc, acc.records, output)
    click.echo(f"wrote {len(acc.records)} records to {path}: {len(acc.now_fixed)} now fixed (kept as guards), "
               f"{len(acc.dropped_fixed)} fixed and dropped, {len(acc.updated)} updated to what they do now, "
               f"{len(acc.dropped_broken)} dropped (parent broken), {len(acc.kept_errors)} kept as they were "
               "(backend error)")


@corpus.command("reproducer")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--key", default=None, help="The record's failure key or a unique prefix (default: the only record).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The script to write.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="The product TOML (default: the one recorded in the header, relative to the corpus file).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Only base_url=URL: the product's URL.")
def corpus_reproducer(file: str, key: str | None, output: str, config_file: str | None,
                      opts: tuple[str, ...]) -> None:
    """Write a standalone Python reproducer of one record of an HTTP-backend corpus — a committed baseline, or the
    minimised record `ufuzz minimise` wrote — that a product developer runs without ufuzz (see `ufuzz failures
    show --reproducer`)."""
    from ufuzz.backends.adapters.http import load_config
    from ufuzz.cli.failures import write_script
    from ufuzz.reports.reproducer import record_reproducer
    from ufuzz.triage.corpusfile import CorpusFileError, load_corpus, resolve_options

    try:
        rc = load_corpus(file)
    except CorpusFileError as exc:
        _fail(2, str(exc))
    if rc.backend != "http":
        _fail(2, f"{file}: a reproducer needs an HTTP backend corpus (this one was recorded on {rc.backend!r}); "
                 f"`ufuzz corpus check {file}` replays it with ufuzz")
    matches = [r for r in rc.records if key is None or r.failure_key.startswith(key)]
    if len(matches) != 1:
        what = "no record" if not matches else f"{len(matches)} records"
        _fail(2, f"--key: {what} in {file} match {key!r}" if key else
              f"{file} holds {len(rc.records)} records: choose one with --key")
    rec = matches[0]
    options = {**resolve_options(rc.backend_options, rc.path, rc.backend), **parse_opts(opts)}
    path = config_file or options.get("config")
    try:
        cfg = load_config(str(path), options.get("base_url") or None)
    except (ValueError, TypeError) as exc:
        _fail(2, f"{exc} (pass the product TOML with --config)")
    src = record_reproducer(cfg, rec, rc.checkpoints[rec.checkpoint_id], rc.k, judging=rc.judging,
                            name=Path(output).name)
    out = write_script(src, output)
    click.echo(f"wrote {out}: failure {rec.failure_key} ({rec.operator}, {rec.stage}:{rec.kind}); "
               f"run it with: python3 {out}")
