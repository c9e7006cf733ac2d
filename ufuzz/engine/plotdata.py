"""Per-campaign plot data written while the campaign runs (like AFL++'s ``plot_data``).

``DIR/plot_data.csv`` holds one row per change of what a person plots — unique failures, causes, coverage,
errors — and a heartbeat row at least every :data:`HEARTBEAT` seconds, plus a final row when the campaign
ends. Every row is flushed as it is written, so a report (``ufuzz report``) or a plot of a running or killed
campaign sees the curve so far. The writer only reads the campaign's :class:`~ufuzz.engine.campaign.Progress`
counters; it costs one comparison per step and one short line per change.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "HEARTBEAT", "PlotData", "read_plot_data"]

COLUMNS = ("elapsed_s", "executions", "unique_failures", "causes", "coverage", "coverage_total",
           "mutants_valid", "mutants_rejected", "retained", "errors", "phase")
#: seconds between rows when nothing plotted changes (AFL++ writes every 5 s too)
HEARTBEAT = 5.0
_WATCHED = ("unique_failures", "causes", "coverage", "errors")


def _row(progress: Any, elapsed: float) -> dict[str, Any]:
    row = {c: int(getattr(progress, c, 0) or 0) for c in COLUMNS[1:]}
    row["elapsed_s"] = round(elapsed, 3)
    return row


class PlotData:
    """Appends rows to ``path`` (created with a header line)."""

    def __init__(self, path: str | Path, *, heartbeat: float = HEARTBEAT, append: bool = False) -> None:
        """``append``: go on after the rows already in ``path`` (a resumed campaign, which then calls
        :meth:`rewind` with the executions of its snapshot)."""
        self.path = Path(path)
        self.heartbeat = heartbeat
        self._t0 = time.monotonic()
        header = not (append and self.path.is_file() and self.path.stat().st_size > 0)
        self._fh = self.path.open("w" if header else "a", encoding="utf-8", newline="")
        self._writer = csv.DictWriter(self._fh, fieldnames=COLUMNS)
        if header:
            self._writer.writeheader()
        self._fh.flush()
        self._last: dict[str, Any] | None = None
        self._last_t = self._t0

    def rewind(self, executions: int) -> int:
        """A resumed campaign goes on from its snapshot at ``executions``: the rows of the work after it (rolled
        back, to be redone) are dropped, and the elapsed time goes on from the last row kept. Returns the rows
        kept. The file is rewritten in one step (a kill leaves the old file or the new one)."""
        from ufuzz.engine.ending import write_atomic

        self._fh.close()
        rows = []
        for row in read_plot_data(self.path):
            if row["executions"] > executions:
                break  # rows are in execution order up to the first rolled-back one
            rows.append(row)
        lines = [",".join(COLUMNS)]
        for row in rows:
            lines.append(",".join(str(row[c]) if c == "elapsed_s" else str(int(row[c])) for c in COLUMNS))
        write_atomic(self.path, "\r\n".join(lines) + "\r\n")
        self._fh = self.path.open("a", encoding="utf-8", newline="")
        self._writer = csv.DictWriter(self._fh, fieldnames=COLUMNS)
        elapsed = rows[-1]["elapsed_s"] if rows else 0.0
        self._t0 = time.monotonic() - elapsed
        self._last_t = time.monotonic()
        self._last = None
        return len(rows)

    def record(self, progress: Any, *, force: bool = False) -> bool:
        """Write a row if a watched counter changed, the heartbeat is due or ``force``; True if written."""
        if self._fh.closed:
            return False
        now = time.monotonic()
        row = _row(progress, now - self._t0)
        changed = self._last is None or any(row[c] != self._last[c] for c in _WATCHED)
        if not (changed or force or now - self._last_t >= self.heartbeat):
            return False
        if self._last is not None and row["executions"] == self._last["executions"] and not changed:
            return False  # nothing new at all (a final row right after the last step's row)
        self._writer.writerow(row)
        self._fh.flush()
        self._last, self._last_t = row, now
        return True

    def close(self, progress: Any | None = None) -> None:
        """Write the final row (when ``progress`` is given) and close the file."""
        if self._fh.closed:
            return
        if progress is not None:
            self.record(progress, force=True)
        self._fh.close()


def read_plot_data(path: str | Path) -> list[dict[str, float]]:
    """The rows of a ``plot_data.csv`` as numbers ([] when the file is missing); a row cut short by a
    campaign killed mid-write is skipped."""
    p = Path(path)
    if not p.is_file():
        return []
    out: list[dict[str, float]] = []
    with p.open(encoding="utf-8", newline="") as fh:
        for raw in csv.DictReader(fh):
            try:
                out.append({c: float(raw[c]) for c in COLUMNS})
            except (KeyError, TypeError, ValueError):
                continue
    return out
