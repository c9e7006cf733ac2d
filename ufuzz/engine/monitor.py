"""What a running campaign tells the people watching it: the progress counters after each step (and the caller's
progress line), ``plot_data.csv`` (:mod:`ufuzz.engine.plotdata`), the campaign log (``campaign.log``, JSON lines)
and a heartbeat that marks the campaign alive even while one backend call takes long. Nothing here decides
anything: a failure to tell (a full disk under the log) never stops a campaign."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from ufuzz.engine.state import CampaignState, Progress

__all__ = ["HEARTBEAT_SECONDS", "LogFile", "Monitor"]

HEARTBEAT_SECONDS = 30.0


class LogFile:
    """The campaign log's file: a line is written whole or not at all (on a full disk the file is cut back
    to the last complete line and the error is raised)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, text: str) -> None:
        size = os.fstat(self._fd).st_size
        try:
            self._emit(text.encode("utf-8"))
        except OSError:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise

    def _emit(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def flush(self) -> None:
        pass

    def close(self) -> None:
        os.close(self._fd)


class Monitor:
    """The campaign's log, plot data, heartbeat and progress callbacks. ``on_setup`` is told each set-up phase
    (large suites: the CLI prints them), ``on_progress`` gets the counters after each batch."""

    def __init__(self) -> None:
        self.log: Any = None
        self.plot: Any = None  # PlotData
        self.on_setup: Callable[[str], None] | None = None
        self.on_progress: Callable[[Progress], None] | None = None
        self.on_step: Callable[[Progress], None] | None = None  # the counters after every applied step
        self._heartbeat_stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def open(self, log_file: LogFile, campaign_id: str, plot_path: Path, resumed: bool) -> None:
        """Start logging to ``log_file`` and plotting to ``plot_path`` (a resumed campaign's curve goes on in
        the same file: its rows after the snapshot are redone)."""
        from ufuzz.engine.plotdata import PlotData

        self.log = structlog.wrap_logger(
            structlog.WriteLogger(log_file),
            processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                        structlog.processors.JSONRenderer(sort_keys=True)],
        ).bind(campaign=campaign_id)
        self.plot = PlotData(plot_path, append=resumed)

    def setup(self, phase: str) -> None:
        """A set-up phase begins: tell :attr:`on_setup` (a progress line before the first execution)."""
        if self.on_setup is not None:
            try:
                self.on_setup(phase)
            except Exception:  # noqa: BLE001 - a progress line never stops a campaign
                pass

    def safely(self, level: str, event: str, **facts: Any) -> None:
        """Log ``event`` if the log can take it (the log may be what failed: a full disk)."""
        if self.log is None:
            return
        try:
            getattr(self.log, level)(event, **facts)
        except Exception:  # noqa: BLE001
            pass

    def count(self, state: CampaignState) -> None:
        """The progress counters after a step (and its row of plot_data.csv)."""
        s, f = state.search, state.findings
        p = s.progress
        p.uncovered_obligations = s.scheduler.uncovered()
        p.coverage = s.feedback.reached()
        p.unique_failures = len(f.tally.unique)
        p.causes = len(f.tally.causes)
        p.baseline_failures = len(f.tally.baseline)
        p.reader_failures = len(f.tally.reader)
        if self.plot is not None:
            self.plot.record(p)
        if self.on_step is not None:
            self.on_step(p)

    def progressed(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    def start_heartbeat(self, beat: Callable[[], None]) -> None:
        """Call ``beat`` every HEARTBEAT_SECONDS until :meth:`stop_heartbeat` (a failed beat is not the
        campaign's end)."""
        def run() -> None:
            while not self._heartbeat_stop.wait(HEARTBEAT_SECONDS):
                try:
                    beat()
                except Exception:  # noqa: BLE001
                    pass

        self._heartbeat = threading.Thread(target=run, name="ufuzz-heartbeat", daemon=True)
        self._heartbeat.start()

    def stop_heartbeat(self) -> None:
        self._heartbeat_stop.set()

    def join_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)

    def close_plot(self, progress: Progress) -> None:
        """The final row (the counters the campaign ended with) and the file closed; best effort."""
        if self.plot is not None:
            try:
                self.plot.close(progress)
            except Exception:  # noqa: BLE001
                pass
