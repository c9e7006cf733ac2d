"""``ufuzz backends``: registered backends, what they need and accept; ``ufuzz backends check``: conformance."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from ufuzz.cli.errors import BadInput, Unavailable
from ufuzz.cli.options import backend_options

_MARK = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}


@click.group(invoke_without_command=True)
@click.pass_context
def backends(ctx: click.Context) -> None:
    """List registered backends: capabilities, options and whether their dependencies are installed.

    `ufuzz backends check NAME` runs the conformance kit on one of them."""
    if ctx.invoked_subcommand is None:
        _list()


def _list() -> None:
    from ufuzz.backends import registry
    from ufuzz.backends.options import listing

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
        lines = listing(cls.options_spec or (), cls.option_rules)
        click.echo("    options (--opt NAME=VALUE):" + ("" if lines else " none"))
        for line in lines:
            click.echo(f"      {line}")


@backends.command("check")
@click.argument("name")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Backend option (repeatable).")
@click.option("--config", "config_file", default=None, help="Backend config file (TOML), e.g. for http.")
@click.option("--isolation", type=click.Choice(["auto", "process", "none"]), default="auto", show_default=True,
              help="Where the backend runs, as for `ufuzz run` (auto: a worker process for native libraries).")
@click.option("--fresh", is_flag=True, help="A new backend instance for every check.")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="Working directory of the backend (default: a temporary one, removed afterwards).")
def check(name: str, opts: tuple[str, ...], config_file: str | None, isolation: str, fresh: bool,
          workdir: str | None) -> None:
    """Run the backend conformance kit on backend NAME: one line per check; exit 1 when one fails, 3 when the
    backend cannot be reached at all."""
    from ufuzz.backends import conformance, registry
    from ufuzz.backends.protocol import BackendError, BackendUnavailable

    options = backend_options(opts, config_file)
    try:
        cls = registry.load(name)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="'NAME'") from None
    except BackendUnavailable as exc:
        raise Unavailable(str(exc)) from None
    try:
        cls.check_options(options)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    shown = ", ".join(f"{k}={v}" for k, v in cls.public_options(options).items()) or "defaults"
    # a backend whose listing may come in pages (it checks its listing at build) also lists a state larger than one
    checks = conformance.CHECKS + (conformance.LARGE_CHECKS if cls.build_checks_listing else ())
    click.echo(f"conformance of backend {name!r} ({shown}): {len(checks)} checks")
    for caveat in cls.caveats(options):
        click.echo(f"warning: {caveat}")

    def report(r: conformance.CheckResult) -> None:
        click.echo(f"{_MARK[r.outcome]:5s} {r.check:34s} {r.seconds:7.2f} s")
        if r.message:
            click.echo(f"      {r.message}")

    with tempfile.TemporaryDirectory(prefix="ufuzz-check-") as tmp:
        root = Path(workdir) if workdir else Path(tmp)
        made = iter(range(1, 10_000))

        def factory():
            return registry.create(name, root / f"backend{next(made)}", options, isolation=isolation)

        try:
            results = conformance.run_conformance(factory, checks, fresh=fresh, on_result=report)
        except BackendUnavailable as exc:
            raise Unavailable(str(exc)) from None
        except ValueError as exc:
            raise BadInput(f"backend {name!r} could not start: {exc}") from None
        except (BackendError, OSError) as exc:
            raise Unavailable(f"backend {name!r} could not start: {exc}") from None
    counts = {o: sum(r.outcome == o for r in results) for o in ("passed", "failed", "error", "skipped")}
    click.echo(f"{len(results)} checks: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    bad = [r for r in results if not r.ok]
    if bad and all(r.unreachable for r in bad):  # the product is down: nothing was checked, as `run` says too
        click.echo(f"the backend is unreachable: {bad[0].message}", err=True)
        sys.exit(3)
    if bad:
        sys.exit(1)


@backends.command("schema")
@click.argument("name", type=click.Choice(["http"]))
@click.option("--format", "fmt", type=click.Choice(["json", "md"]), default="json", show_default=True,
              help="json: the JSON Schema; md: the readable reference of the docs site without the schema itself "
                   "(a table per section: keys, types, defaults, what each means).")
def schema(name: str, fmt: str) -> None:
    """Print the JSON Schema of a backend's config file (http: the product TOML, as the loader checks it;
    the docs' product-TOML reference is generated from it)."""
    if fmt == "md":
        from ufuzz.cli.reference import product_toml_markdown

        click.echo(product_toml_markdown(with_schema=False))
        return
    import json

    from ufuzz.backends.adapters.http.schema import product_schema

    click.echo(json.dumps(product_schema(), indent=2))
