"""``ufuzz report``: one self-contained HTML file of a campaign."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(file_okay=False))
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="The HTML file to write (default: report.html in the campaign dir).")
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--max-failures", type=click.IntRange(min=0), default=2000, show_default=True,
              help="At most this many failures in the browser (causes and counts always cover all).")
@click.option("--compare", "compare_dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Another campaign (e.g. last night's): the report opens with what is new, still failing and "
                   "gone (fixed, or not met) since it, by cause.")
@click.option("--compare-db", default=None, help="SQLAlchemy URL of --compare's corpus, if not its SQLite file.")
def report(campaign_dir: str, output: str | None, db: str | None, max_failures: int, compare_dir: str | None,
           compare_db: str | None) -> None:
    """Write a self-contained HTML report: summary, unique failures and coverage over executions, yields per
    operator, causes and a browser of every failure. Nothing in it loads from the network."""
    from ufuzz.cli.errors import Unavailable, read_error, read_errors
    from ufuzz.cli.options import check_output_file
    from ufuzz.reports.html import write_report

    if not Path(campaign_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {campaign_dir}", param_hint="'CAMPAIGN_DIR'")
    if compare_dir is not None and not Path(compare_dir).is_dir():
        raise click.BadParameter(f"no such campaign directory: {compare_dir}", param_hint="'--compare'")
    out = Path(output or Path(campaign_dir) / "report.html")
    check_output_file(out)  # before the report is built: a read-only folder is bad input, said at once
    try:
        path, stats = write_report(Path(campaign_dir), out, db=db, max_failures=max_failures,
                                   compare=Path(compare_dir) if compare_dir else None, compare_db=compare_db)
    except read_errors() as exc:
        raise read_error(exc) from None
    except OSError as exc:  # e.g. the disk filled while writing
        raise Unavailable(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB): {stats}")
