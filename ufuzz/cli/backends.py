"""``ufuzz backends``: registered backends and what they need."""

from __future__ import annotations

import click


@click.command()
def backends() -> None:
    """List registered backends, their capabilities and whether their dependencies are installed."""
    from ufuzz.backends import registry

    for name, spec in registry.available().items():
        try:
            cls = registry.load(name)
            ok, hint = cls.dependencies_installed()
        except Exception as exc:  # a broken third-party entry point must not hide the others
            click.echo(f"{name:10s} {spec}\n    cannot load: {exc}")
            continue
        state = "installed" if ok else f"missing — {hint}"
        click.echo(f"{name:10s} {spec}  [{state}]")
        caps = getattr(cls, "static_capabilities", None)
        if callable(caps):
            c = caps()
            flags = [k for k, v in c.to_dict().items() if isinstance(v, bool) and v]
            click.echo(f"    capabilities: {', '.join(flags)}")
            if c.notes:
                click.echo(f"    notes: {c.notes}")
        click.echo("    runs in: " + ("a recyclable worker process (--isolation auto; 'none' keeps it in process)"
                                      if getattr(cls, "isolate", False) else "the fuzzer's process"))
