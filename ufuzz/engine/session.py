"""A running campaign's session: what it holds open and the signals that stop it, released in one place.

:meth:`Session.open` opens everything a campaign holds — its directory's lock, the Ray connection, the backend,
the LLM client, the lanes, the corpus and failure stores, the log file — and registers each, as it is opened,
in one :class:`contextlib.ExitStack`, with the signal handlers; :meth:`Session.close` releases them
last-opened-first (the lock last: until then the directory is the campaign's). Where the campaign writes is
checked before anything is created, and what a failed opening created is removed again (a backend refusing its
options or failing its preflight round trip, a full disk): nothing is left behind. Releasing is best effort:
nothing that fails while closing can turn a campaign's end into a crash. What the campaign's end needs gone
earlier (the lanes, before the summary) is closed with :meth:`Session.release`, and not again.

Signals: Ctrl-C (or SIGTERM, a CI job's timeout) asks the campaign to stop after the current batch
(:attr:`Session.stop`), so that no backend call, transaction or lock is cut in half. A second Ctrl-C stops at
once — "stop now, resume later": the batch in progress is dropped (its records are not committed, no snapshot
is taken of a state it has begun to change) and the resume redoes it from the last snapshot. It never
interrupts a commit, a snapshot or the campaign's end (:meth:`Session.shielded`: they wait for them, they are
short), and only one interrupt is ever raised, so that the end itself always runs and records how the
campaign ended.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ufuzz.backends import registry
from ufuzz.engine import dirlock, ending
from ufuzz.engine.llmuse import llm_client
from ufuzz.engine.monitor import LogFile
from ufuzz.oracles.judging import Judging

__all__ = ["Session"]

T = TypeVar("T")


class Session:
    def __init__(self) -> None:
        # opened by open(); None until then (and again after a failed opening)
        self.backend: Any = None
        self.llm: Any = None
        self.lanes: Any = None  # LanePool
        self.store: Any = None  # CorpusStore
        self.failures: Any = None  # FailureStore (the oracle side's tables)
        self.campaign_id: str | None = None
        self.log_file: LogFile | None = None
        self.preflight: dict[str, Any] | None = None  # what the preflight round trip saw
        self.lock: Any = None  # DirectoryLock of the campaign directory
        self.ray: Any = None  # the Ray connection the campaign made
        self.stack = ExitStack()
        self.stop = threading.Event()  # set by the first Ctrl-C or SIGTERM: end after the current batch
        self._shielded = 0  # > 0 while committing or ending: a second Ctrl-C waits for it
        self._interrupted = False  # a second Ctrl-C has interrupted the campaign (only one ever does)
        self._held: dict[int, dict[str, Callable[[], Any]]] = {}

    # -- opening -----------------------------------------------------------------------------------------
    def open(self, config: Any, suite: Any, *, backend: Any = None, resume_id: str | None = None,
             setup: Callable[[str], None] = lambda phase: None) -> None:
        """Open what the campaign of ``config`` over ``suite`` holds: its directory locked, the backend
        (``backend``: the caller's, left open at the end), LLM client, lanes, stores (the campaign recorded as
        running: a new one, or ``resume_id`` again) and log file. ``setup`` is told each slow phase."""
        from ufuzz.engine.startup import check_start, undo_on_failure

        out = Path(config.out)
        check_start(out, config.db)
        if config.ray_address is not None:  # before anything is created: an unreachable cluster leaves nothing
            from ufuzz.engine.parallel.raylanes import connect

            self.ray = self.hold(connect(config.ray_address, config.workers))
        with undo_on_failure(out, lambda: self._abandon(backend)):
            out.mkdir(parents=True, exist_ok=True)
            lock = dirlock.DirectoryLock.acquire(out)  # one writer per directory, for the campaign's whole life
            self.lock = self.hold(lock, lock.release)
            for stray in (*out.glob(".summary.json.*.tmp"), *out.glob(".campaign.json.*.tmp")):
                stray.unlink(missing_ok=True)  # a kill inside an atomic write left it (the directory is ours now)
            setup(f"starting backend {config.backend!r}")
            self.backend = self.hold(backend or registry.create(
                config.backend, out / "backend", config.backend_options, isolation=config.isolation,
                worker={"recycle_every": config.worker_recycle, "max_rss_mb": config.worker_max_rss_mb,
                        "call_timeout": config.worker_timeout}))
            Judging.of(config).check(self.backend)  # e.g. hidden retrieval with nothing that responds
            self.llm = llm_client(config)
            if config.preflight:
                from ufuzz.engine.preflight import preflight

                setup("preflight round trip")
                largest = (max(suite.checkpoints.values(), key=lambda c: len(c.memories), default=None)
                           if self._checks_listing(config) else None)
                self.preflight = preflight(self.backend, self.llm, largest)
            self.lanes = self.hold(self._start_lanes(config, suite, out, type(backend)))
            self._open_stores(config, out, resume_id)
            # which campaign of the (possibly shared) store this directory holds: `ufuzz status DIR --db URL`
            ending.write_atomic(out / "campaign.json", json.dumps({"campaign": self.campaign_id}) + "\n")
            self.log_file = self.hold(LogFile(out / "campaign.log"))

    @staticmethod
    def _adapter_class(config: Any, given: type) -> type:
        """The backend adapter's class (``given``, the class of a backend given to the campaign, when the registry
        has none of that name): what lanes that build their own backend build, and what a worker proxy stands for."""
        try:
            return registry.load(config.backend)
        except KeyError:
            return given

    def _checks_listing(self, config: Any) -> bool:
        """Whether the backend's build checks its listing (``MemoryBackend.build_checks_listing``), asked of the
        adapter's class too: under ``--isolation process`` the campaign holds a proxy of it."""
        return bool(getattr(self.backend, "build_checks_listing", False)
                    or getattr(self._adapter_class(config, type(self.backend)), "build_checks_listing", False))

    def _start_lanes(self, config: Any, suite: Any, out: Path, given: type) -> Any:
        from ufuzz.engine.parallel.core import LaneSpec
        from ufuzz.engine.parallel.lanesetup import start_lanes

        spec = LaneSpec.of(config, self._adapter_class(config, given), suite.checkpoints)
        return start_lanes(spec, out / "lanes", backend=self.backend, llm=self.llm, ray=self.ray)

    def _open_stores(self, config: Any, out: Path, resume_id: str | None) -> None:
        """The corpus and failure stores, with the campaign recorded as running (a new one, or the resumed one
        again) and the directory's lock naming it."""
        from ufuzz.corpus.failures import FailureStore
        from ufuzz.corpus.store import CorpusStore

        url = config.db or f"sqlite:///{(out / 'corpus.sqlite').resolve()}"
        store = self.store = self.hold(CorpusStore(url))
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        if resume_id is not None:
            store.resume_campaign(resume_id, budget=config.budget, **me)
            self.campaign_id = resume_id
        else:
            # strategy, seed and start second, plus a random tag: two runs started in the same second on one
            # team database must not collide (the tag is not from the campaign's rng: determinism holds)
            self.campaign_id = (f"{config.strategy}-s{config.seed}-{time.strftime('%Y%m%dT%H%M%S')}"
                                f"-{os.urandom(3).hex()}")
            store.start_campaign(self.campaign_id, config=config.to_dict(), backend=self.backend.describe(),
                                 seed=config.seed, budget=config.budget, **me)
        self.lock.write(self.campaign_id)
        failures = self.failures = FailureStore(url, self.campaign_id)
        self.hold(failures, lambda: (failures.close(), failures.attach(None)))

    def _abandon(self, given: Any) -> None:
        """Close what a failed opening opened (the caller's backend stays open); a campaign already recorded in
        a shared database is marked as ended in error there."""
        if self.store is not None and self.campaign_id is not None:
            try:
                self.store.finish_campaign(self.campaign_id, status=ending.ERROR,
                                           message="the campaign failed to start")
            except Exception:  # noqa: BLE001 - best effort: the opening's own error is reported
                pass
        if given is not None:
            self.forget(given)
        self.close()
        self.backend = self.lanes = self.store = self.failures = self.log_file = self.lock = self.ray = None

    # -- resources -----------------------------------------------------------------------------------------
    def hold(self, thing: T, close: Callable[[], Any] | None = None) -> T:
        """Register ``thing`` (closed with ``close``, default its ``close()``) and return it."""
        entry = {"close": close or thing.close}  # type: ignore[attr-defined]
        self._held[id(thing)] = entry
        self.stack.callback(self._close, entry)
        return thing

    @staticmethod
    def _close(entry: dict[str, Callable[[], Any]]) -> None:
        close = entry.pop("close", None)  # once: a thing released early is not closed again
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    def release(self, *things: Any) -> None:
        """Close these held things now (in the order given), not again at the end."""
        for thing in things:
            entry = self._held.get(id(thing))
            if entry is not None:
                self._close(entry)

    def forget(self, thing: Any) -> None:
        """Leave ``thing`` open (it is the caller's, e.g. a backend given to the campaign)."""
        entry = self._held.get(id(thing))
        if entry is not None:
            entry.pop("close", None)

    def close(self) -> None:
        """Release everything still held, last opened first."""
        self.stack.close()

    # -- signals -------------------------------------------------------------------------------------------
    def catch_signals(self) -> None:
        """Handle Ctrl-C and SIGTERM while the session is open (only the main thread can); the previous
        handlers come back when it closes."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        previous_term = signal.signal(signal.SIGTERM, lambda s, f: self.stop.set())

        def restore() -> None:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, previous_term)

        self.stack.callback(restore)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if not self.stop.is_set():
            self.stop.set()
            return
        if self._shielded or self._interrupted:
            return
        self._interrupted = True
        raise KeyboardInterrupt

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A second Ctrl-C waits until this block is done (a commit, a snapshot)."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1

    def shield_to_the_end(self) -> None:
        """From now on no Ctrl-C interrupts: the campaign is ending."""
        self._shielded += 1
