"""``ufuzz strategies``: the search strategies, baselines and ablations ``--strategy`` accepts."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def strategies(as_json: bool) -> None:
    """List the strategies for `ufuzz run --strategy` and `ufuzz bench --strategies`."""
    from ufuzz.engine.strategies import describe, strategy_names

    rows = [(name, *describe(name)) for name in strategy_names()]
    if as_json:
        click.echo(json.dumps([{"name": n, "group": g, "description": d} for n, g, d in rows], indent=2))
        return
    width = max(len(n) for n, _g, _d in rows)
    for group, heading in (("strategy", "strategies"), ("baseline", "baselines"), ("ablation", "ablations")):
        click.echo(f"{heading}:")
        for n, g, d in rows:
            if g == group:
                click.echo(f"  {n.ljust(width)}  {d}")
