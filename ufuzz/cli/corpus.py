"""``ufuzz corpus``: export and check regression corpora."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ufuzz.cli.options import check_output_file, parse_opts


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
    from ufuzz.corpus.regression import export_campaign

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    check_output_file(output)
    try:
        res = export_campaign(Path(campaign_dir), output, db, max_records=max_records)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    ops = ", ".join(f"{op} {n}" for op, n in res.by_operator().items())
    click.echo(f"wrote {len(res.records)} of {res.unique_failures} unique failures over {res.checkpoints} "
               f"checkpoints to {res.path} ({res.size / 1024:.0f} KB): {ops}")
    if res.skipped:
        click.echo(f"  skipped {len(res.skipped)} that cannot be rebuilt, e.g. {res.skipped[0][1]}", err=True)


@corpus.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--backend", default=None, help="Backend to replay on (default: the one recorded in the header).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
              help="Backend option (repeatable; overrides the header's options for the recorded backend).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--changed-only", is_flag=True, help="List only the records that changed status.")
def corpus_check(file: str, backend: str | None, opts: tuple[str, ...], as_json: bool, changed_only: bool) -> None:
    """Replay every record of a regression corpus on a fresh backend.

    Exit status: 0 every record still reproduces, 1 some record changed status (fixed, fails differently,
    parent broken, backend error), 2 bad input (malformed file, unknown backend or options).
    """
    from ufuzz.backends.protocol import BackendError, BackendUnavailable
    from ufuzz.corpus.regression import CorpusFileError, load_corpus
    from ufuzz.engine.regression import check_corpus
    from ufuzz.reports.regression import render_check

    def bad(message: str) -> None:
        click.echo(f"Error: {message}", err=True)
        sys.exit(2)

    options = parse_opts(opts)
    try:
        rc = load_corpus(file)
    except CorpusFileError as exc:
        bad(str(exc))
    from ufuzz.backends import registry

    if backend is None and rc.backend not in registry.available():  # the file is at fault, not an option
        bad(f"{file}:{rc.header_line}: unknown backend {rc.backend!r} in the corpus header (field 'backend'); "
            f"known: {', '.join(registry.available())}; pass --backend NAME to replay it on another backend")
    try:
        report = check_corpus(rc, backend=backend, options=options)
    except KeyError as exc:
        bad(f"--backend: {str(exc.args[0]) if exc.args else exc}")
    except BackendUnavailable as exc:
        bad(str(exc))
    except (BackendError, ValueError) as exc:
        bad(f"cannot start backend {backend or rc.backend!r}: {exc}")
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str))
    else:
        click.echo(render_check(report, all_rows=not changed_only))
    sys.exit(report.exit_code)
