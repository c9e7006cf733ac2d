"""``ufuzz status``: a campaign's summary."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--db", default=None, help="SQLAlchemy URL if the corpus is not the campaign dir's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(campaign_dir: str, db: str | None, as_json: bool) -> None:
    """Summarise a campaign: executions, coverage, retained, unique failures by operator and kind."""
    from ufuzz.cli.errors import read_error, read_errors
    from ufuzz.reports.status import campaign_status

    try:
        st = campaign_status(Path(campaign_dir), db)
    except read_errors() as exc:
        raise read_error(exc) from None
    if as_json:
        click.echo(json.dumps(st, indent=2, sort_keys=True, default=str))
        return
    from ufuzz.reports.status import render_status

    click.echo(render_status(st))
