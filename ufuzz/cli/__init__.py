"""The ``ufuzz`` command line: one module per command (group), registered on :func:`main` here."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def _is_the_program() -> bool:
    """Whether this process is the ``ufuzz`` command itself (the console script or ``python -m ufuzz``), not a
    test runner invoking the command group in-process."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return argv0.name == "ufuzz" or (argv0.name == "__main__.py" and argv0.parent.name == "ufuzz")


def _ctrl_c_interrupts() -> None:
    """Ctrl-C interrupts the command from its first import on, as the running campaign's own handler does later.

    A process started in the background of a non-interactive shell (``ufuzz run ... &`` in a script, a CI
    runner's job) inherits SIGINT ignored, and CPython then installs no handler of its own: an interrupt that
    came while the command was still starting was lost and the campaign ran to its budget, although the same
    interrupt a moment later (once the campaign catches signals) stops it cleanly."""
    if _is_the_program() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_ctrl_c_interrupts()

import click  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from ufuzz.cli import (  # noqa: E402
    backends,
    bench,
    cache,
    corpus,
    failures,
    minimise,
    replay,
    report,
    run,
    seeds,
    status,
    strategies,
)
from ufuzz.cli.errors import INTERRUPTED  # noqa: E402
from ufuzz.cli.options import parse_opts  # noqa: E402

__all__ = ["main", "parse_opts"]


def _term_interrupts() -> None:
    """SIGTERM (a CI job's timeout) interrupts as Ctrl-C does, in this process only: a child forked from it
    (a lane, a backend worker) still dies of it as usual."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    me = os.getpid()

    def on_term(signum, frame):  # noqa: ARG001 - signal handler signature
        if os.getpid() != me:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


class _Main(click.Group):
    """The command group: an interrupt anywhere outside a running campaign (importing, loading seeds, a
    backend starting, a report being written) ends with exit 130 and one line, never click's "Aborted!" and
    exit 1 (which reads as "failures found" in CI). A running campaign handles its own interrupts."""

    def main(self, *args, **kwargs):  # type: ignore[override]
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:
            if exc.code == INTERRUPTED and _is_the_program():
                # CPython 3.11 keeps a process-wide "unhandled KeyboardInterrupt" flag once an interrupt has passed
                # through some import machinery, even when it was handled, and then exits by SIGINT (-2) instead of
                # 130: end here, with the code said (output flushed; nothing is left to clean up after an interrupt)
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                        pass
                os._exit(INTERRUPTED)
            raise

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        _term_interrupts()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=_Main)
@click.version_option(package_name="ufuzz")
def main() -> None:
    """ufuzz — a coverage-guided fuzzer for the persistent memory of LLM agents."""


main.add_command(run.run)
main.add_command(status.status)
main.add_command(seeds.seeds)
main.add_command(backends.backends)
main.add_command(cache.cache)
main.add_command(replay.replay)
main.add_command(bench.bench)
main.add_command(corpus.corpus)
main.add_command(strategies.strategies)
main.add_command(failures.failures)
main.add_command(minimise.minimise)
main.add_command(report.report)
