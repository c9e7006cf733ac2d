"""What ``ufuzz run`` shows while a campaign runs: a live display on a terminal, plain lines in CI.

On a terminal (stderr is a TTY) a ``rich`` live display redraws executions, rate, elapsed time, ETA, unique
failures, causes, coverage and errors a few times a second. Without one (a CI log, a pipe) the same facts go
to stderr as one plain line every ``every_s`` seconds or every ``every_n`` executions, whichever comes first,
and once at the end — so a nightly job's log shows the campaign is alive and how far it got.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["format_duration", "parse_duration", "progress_line", "PlainProgress", "run_with_progress"]


def format_duration(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``42s``; ``-`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "-"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``2h``, ``1h30m``; raises ValueError naming the text."""
    import re

    raw = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        value = float(raw)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", raw)
        if not parts or "".join(n + u for n, u in parts) != raw:
            raise ValueError(f"{text!r} is not a duration (e.g. 600, 90s, 30m, 2h, 1h30m)")
        value = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if value <= 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return value


def _eta(p: Any, elapsed: float, max_time: float | None) -> float | None:
    """Seconds left: the budget at the current rate, capped by the time limit."""
    left = None
    if p.executions > 0 and elapsed > 0 and p.budget:
        left = (p.budget - p.executions) / (p.executions / elapsed)
    if max_time is not None:
        cap = max(max_time - elapsed, 0.0)
        left = cap if left is None else min(left, cap)
    return left


def progress_line(p: Any, elapsed: float, max_time: float | None = None, hidden: bool = False) -> str:
    """One line of the campaign's progress counters (``p`` is a campaign ``Progress``; ``hidden``: retrieval is
    hidden, so coverage is not observed and the line says so instead of "coverage 0/N")."""
    rate = p.executions / elapsed if elapsed > 0 else 0.0
    pct = f" ({100 * p.executions / p.budget:.0f}%)" if p.budget else ""
    cov = "hidden" if hidden else f"{p.coverage}/{p.coverage_total}" if p.coverage_total else str(p.coverage)
    causes = getattr(p, "causes", None)
    limit = f"/{format_duration(max_time)}" if max_time is not None else ""
    return (f"execs {p.executions}/{p.budget}{pct}  {rate:.1f}/s  elapsed {format_duration(elapsed)}{limit}  "
            f"ETA {format_duration(_eta(p, elapsed, max_time))}  unique failures {p.unique_failures}"
            + (f"  causes {causes}" if causes is not None else "")
            + f"  coverage {cov}  errors {p.errors}")


class PlainProgress:
    """Writes :func:`progress_line` to ``stream`` every ``every_s`` seconds or ``every_n`` executions."""

    def __init__(self, stream: TextIO, *, every_s: float = 10.0, every_n: int = 0, max_time: float | None = None,
                 clock: Callable[[], float] = time.monotonic, hidden: Callable[[], bool] = lambda: False) -> None:
        self.stream = stream
        self.hidden = hidden
        self.every_s = every_s
        self.every_n = every_n
        self.max_time = max_time
        self.clock = clock
        self.t0 = clock()
        self._last_t = self.t0
        self._last_n = 0
        self.lines = 0

    def update(self, p: Any) -> None:
        now = self.clock()
        due_n = self.every_n > 0 and p.executions - self._last_n >= self.every_n
        if now - self._last_t >= self.every_s or due_n:
            self._emit(p, now)

    def finish(self, p: Any) -> None:
        if p.executions != self._last_n or not self.lines:
            self._emit(p, self.clock())

    def _emit(self, p: Any, now: float) -> None:
        self.stream.write(f"[ufuzz] {progress_line(p, now - self.t0, self.max_time, self.hidden())}\n")
        self.stream.flush()
        self._last_t, self._last_n = now, p.executions
        self.lines += 1


def run_with_progress(campaign: Any, *, quiet: bool = False, every_s: float = 10.0, every_n: int = 0,
                      stream: TextIO | None = None, on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run ``campaign`` with the live display (terminal), plain lines (no terminal) or nothing (quiet);
    ``on_start`` is called once, at the first progress report (the campaign has started)."""
    err = stream or sys.stderr
    max_time = getattr(campaign.config, "max_time", None)
    started: list[bool] = []

    def hidden() -> bool:  # known once the campaign has started (its judging: is the selection level judged?)
        j = getattr(campaign, "judging", None)
        return isinstance(j, dict) and not j.get("selection", True)

    def first(_p: Any) -> None:
        if not started:
            started.append(True)
            if on_start is not None:
                on_start()

    if quiet:
        return campaign.run(on_progress=first)
    if not err.isatty():
        plain = PlainProgress(err, every_s=every_s, every_n=every_n, max_time=max_time, hidden=hidden)

        def plain_update(p: Any) -> None:
            first(p)
            plain.update(p)

        summary = campaign.run(on_progress=first, on_step=plain_update)  # per step: a batch is up to 128 of them
        plain.finish(campaign.progress)
        return summary
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    t0 = time.monotonic()

    def view(p: Any) -> Text:
        main = progress_line(p, time.monotonic() - t0, max_time, hidden())
        extra = (f"phase {p.phase}  uncovered obligations {p.uncovered_obligations}  valid {p.mutants_valid}  "
                 f"rejected {p.mutants_rejected}  retained {p.retained}")
        return Text(f"{main}\n{extra}")

    with Live(view(campaign.progress), console=Console(file=err), refresh_per_second=4, transient=False) as live:
        def update(p: Any) -> None:
            first(p)
            live.update(view(p))

        return campaign.run(on_progress=first, on_step=update)
