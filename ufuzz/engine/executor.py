"""The executor: runs parents and mutants on independent copies of the parent's memory state.

Every mutant runs on its own fork of its parent's state (a native copy where the backend can copy; otherwise
the checkpoint is rebuilt in a fresh namespace and the parent's operations replayed), so writes of a mutant
never reach its parent, its siblings or the checkpoint. Parent executions are cached per (state, query), in
a bounded LRU (an evicted parent is run again, and counted, when it is picked again); ``list()`` of a state is
cached per state content for the validators (:attr:`Executor.listings`, handed to every ``StateView``).
An execution records the memory-use behaviour U(q, M): ordered top-k ids, scores, texts and the response — the
backend's own answer when it answers, else the configured responder's (:mod:`ufuzz.backends.responders`), else
none (then there is no response-level verdict). Memory ids the backend's answer cites are recorded
(``Execution.cited_ids``), never judged.

With hidden retrieval — a backend that exposes none, or a campaign that hides it (``hidden=True``,
``--retrieval-visibility hidden``) — the backend still retrieves for its answer (or the configured answerer),
but the execution keeps no top-k: what the fuzzer observes is the response alone.
Backend faults become ``Execution.error`` (never exceptions out of ``execute``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ufuzz._util.lru import LRU
from ufuzz.backends.protocol import Answer, BackendError, MemoryBackend, StateHandle, StoredMemory
from ufuzz.backends.responders import BACKEND, Responder
from ufuzz.engine import probes as system_probes
from ufuzz.engine.identify import distinct, identify
from ufuzz.engine.readback import reads_back
from ufuzz.model import Checkpoint, Execution, FuzzCase, StateOp
from ufuzz.oracles.matching import Abstention, is_abstention

#: parent executions kept (an evicted one is run again, and counted, if its case is picked again)
MAX_PARENT_EXECUTIONS = 16384
#: state listings kept for validators, by state key
MAX_LISTINGS = 256


class SharedStates:
    """Checkpoint states shared by the executors of thread lanes over one backend: each checkpoint is built once,
    by the first lane that needs it, and released by :meth:`close` once every lane is done. Only checkpoint states
    are shared: nothing writes to them (a mutant writes to a fork), so lanes may run on them at once."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._states: dict[str, StateHandle] = {}

    def get(self, checkpoint_id: str, build: Callable[[str], StateHandle]) -> StateHandle:
        with self._lock:
            lock = self._locks.setdefault(checkpoint_id, threading.Lock())
        with lock:
            if checkpoint_id not in self._states:
                self._states[checkpoint_id] = build(checkpoint_id)
            return self._states[checkpoint_id]

    def close(self) -> None:
        with self._lock:
            handles, self._states = list(self._states.values()), {}
        for handle in handles:
            try:
                self.backend.release(handle)
            except BackendError:
                pass


class Executor:
    def __init__(self, backend: MemoryBackend, checkpoints: dict[str, Checkpoint], k: int = 5,
                 responder: Responder | None = None, max_live_states: int = 32, hidden: bool = False,
                 max_parent_executions: int = MAX_PARENT_EXECUTIONS, shared: SharedStates | None = None,
                 readback: bool = True, probes: bool = True) -> None:
        self.backend = backend
        self.shared = shared  # checkpoint states shared with other thread lanes (never released here)
        self.checkpoints = checkpoints
        self.k = k
        caps = backend.capabilities
        self.copyable = caps.copyable
        self.hidden = hidden or not caps.visible_retrieval
        self.answers = caps.answers
        # every verified write is searched for by its own words beside a twin on a copy (ufuzz.engine.readback)
        # where search returns the stored memories themselves, states can be copied and retrieval is seen
        self.readback = readback and reads_back(caps) and self.copyable and not self.hidden
        # the reachability probe reads checkpoint memories back the same way (ufuzz.engine.probes), once per
        # checkpoint: what it found, by checkpoint id
        self.probes = probes
        self.probe_reach = probes and self.readback
        self._reached: dict[str, tuple[list, dict]] = {}
        self.responder = responder
        # what the responder says when it abstains: the backend's own phrases when it answers, else the
        # configured answerer's (Judging.build sets them), else the built-in ones
        self.abstention = (Abstention(tuple(caps.abstain_phrases), caps.abstain_defaults) if caps.answers
                           else getattr(responder, "abstention", None))
        # live states by state key, least recently used first. Checkpoint states (no ops) stay; at most
        # ``max_live_states`` mutated states are kept open — an evicted one is rebuilt from its recipe
        # (checkpoint + ops) when a retained mutant needs it again. This bounds memory and open files on
        # backends whose states are heavy (a Kuzu database, a qdrant directory per state).
        self._states: OrderedDict[str, StateHandle] = OrderedDict()
        self._live: set[StateHandle] = set()  # the handles of _states, for release() to ask in O(1)
        self._pinned: set[str] = set()
        self.max_live_states = max(1, int(max_live_states))
        self.evictions = 0
        self._evicted: list[str] = []  # state keys let go since take_evicted() last asked
        self._cache: LRU[tuple[str, str], Execution] = LRU(max_parent_executions)
        self.listings: LRU[str, tuple[StoredMemory, ...]] = LRU(MAX_LISTINGS)
        self.forks = 0
        self.rebuilds = 0
        self.faults: list[tuple[str, str]] = []  # (operation, message) of backend faults nothing waited for

    # -- states ----------------------------------------------------------------------------------------
    def _build(self, checkpoint_id: str) -> StateHandle:
        return self.backend.build(self.checkpoints[checkpoint_id])

    def _replay(self, state: StateHandle, ops: tuple[StateOp, ...]) -> None:
        for op in ops:
            if op.op == "add" and op.memory is not None:
                res = self.backend.add(state, op.memory)
            elif op.op == "update" and op.target and op.memory is not None:
                res = self.backend.update(state, op.target, op.memory)
            elif op.op == "delete" and op.target:
                res = self.backend.delete(state, op.target)
            else:
                raise BackendError(f"cannot replay malformed op {op}")
            if not res.ok:
                raise BackendError(f"replaying {op.op} {op.target or ''} failed: {res.detail}")

    def state_of(self, case: FuzzCase) -> StateHandle:
        """The live state of ``case`` (built or reconstructed on first use, then kept)."""
        if self.shared is not None and not case.ops:
            return self.shared.get(case.checkpoint_id, self._build)
        key = case.state_key
        if key not in self._states:
            handle = self._build(case.checkpoint_id)
            if case.ops:
                self.rebuilds += 1
                self._replay_or_release(handle, case.ops)
            else:
                self._pinned.add(key)
            self._states[key] = handle
            self._live.add(handle)
            self._evict(keep=key)
        self._states.move_to_end(key)
        return self._states[key]

    def _evict(self, keep: str) -> None:
        unpinned = [k for k in self._states if k not in self._pinned and k != keep]
        while len(unpinned) + (keep not in self._pinned) > self.max_live_states and unpinned:
            victim = unpinned.pop(0)
            handle = self._states.pop(victim)
            self._live.discard(handle)
            self.evictions += 1
            self._evicted.append(victim)
            self._release_quietly(handle)

    def live(self, key: str) -> bool:
        """Whether the state ``key`` is held here (built and not evicted)."""
        return key in self._states

    def take_evicted(self) -> tuple[str, ...]:
        """The state keys let go (evicted) since the last call and not live again: a lane tells the pool, so that
        the pool does not keep sending work to a lane for a state it would have to rebuild."""
        gone, self._evicted = self._evicted, []
        return tuple(dict.fromkeys(k for k in gone if k not in self._states))

    def _release_quietly(self, handle: StateHandle) -> None:
        """Release ``handle``; a failure is kept in :attr:`faults` (the campaign records it) and not raised,
        since nothing that runs afterwards depends on it."""
        try:
            self.backend.release(handle)
        except BackendError as exc:
            self.faults.append(("release", f"{type(exc).__name__}: {exc}"))

    def fork(self, case: FuzzCase) -> StateHandle:
        """An independent copy of ``case``'s state for a mutant to write to and run on."""
        if self.copyable:
            self.forks += 1
            return self.backend.fork(self.state_of(case))
        self.rebuilds += 1
        handle = self._build(case.checkpoint_id)
        self._replay_or_release(handle, case.ops)
        return handle

    def _replay_or_release(self, handle: StateHandle, ops: tuple[StateOp, ...]) -> None:
        try:
            self._replay(handle, ops)
        except BaseException:
            self._release_quietly(handle)
            raise

    def adopt(self, case: FuzzCase, handle: StateHandle) -> None:
        """Keep ``handle`` as the live state of ``case`` (a retained state mutant may become a parent)."""
        if case.state_key in self._states and self._states[case.state_key] != handle:
            self.release(handle)
            return
        self._states[case.state_key] = handle
        self._live.add(handle)
        self._states.move_to_end(case.state_key)
        self._evict(keep=case.state_key)

    def release(self, handle: StateHandle) -> None:
        if handle in self._live:
            return
        self._release_quietly(handle)

    # -- executions --------------------------------------------------------------------------------------
    def execute(self, case: FuzzCase, state: StateHandle) -> Execution:
        ex = Execution(case_id=case.id, state_key=case.state_key, query=case.query.text)
        t0 = time.perf_counter()
        try:
            got = self.backend.retrieve(state, case.query.text, self.k)
            own = [r.id for r in got]
            # a result identified by its text as another memory of the case; one memory returned twice: a ranking
            # of distinct items
            ids = identify(case, got, self.checkpoints.get(case.checkpoint_id),
                           lambda: self._listing(case, state)) or own
            ex.top_ids = distinct(ids) if len(set(ids)) < len(ids) else ids
            if ex.top_ids != own or any(r.native_id is not None for r in got):  # the product's own ids, kept
                ex.native_ids = [r.native_id or r.id for r in got]
            ex.top_scores = [float(r.score) for r in got]
            ex.top_texts = [r.text for r in got]
            resp = self.backend.answer(state, case.query.text, got) if self.answers else None
            if isinstance(resp, Answer):
                ex.cited_ids = list(resp.cited)
                resp = resp.text
            if resp is not None:
                ex.response, ex.responder = str(resp), BACKEND
            elif self.responder is not None:
                ex.response, ex.responder = self.responder.respond(case.query.text, got), self.responder.name
        except Exception as exc:  # BackendError, or an adapter bug: the backend's fault, not the fuzzer's
            ex.error = f"{type(exc).__name__}: {exc}"
        ex.seconds = time.perf_counter() - t0
        # a seed's own execution (not a control of it), after the timing: the probes' calls are not the system's
        # latency on the question
        if self.probes and ex.error is None and case.id == case.seed_id and not self.hidden:
            ex.probes = self._probe(case, state, got)
        ex.abstained = ex.error is None and ex.responder is not None and is_abstention(ex.response, self.abstention)
        if self.hidden:
            ex.top_ids, ex.top_scores, ex.top_texts, ex.native_ids = [], [], [], None
        return ex

    def _probe(self, case: FuzzCase, state: StateHandle, got: list) -> dict | None:
        """What the system probes see on a seed's execution (:mod:`ufuzz.engine.probes`): its result list, and
        once per checkpoint the reachability of the checkpoint's oldest and newest memories (``probed``: what each
        showed, so that a replay can tell "reachable now" from "nothing could be said"). Any fault of a probe is
        kept with :attr:`faults` (an error record) and never costs the seed's execution; a checkpoint whose probe
        failed is not probed again."""
        out: dict = {}
        try:
            short = system_probes.short_list(self.backend, state, case.query.text, self.k, got,
                                             listing=lambda: self._listing(case, state))
            if short is not None:
                out["short"] = short
        except Exception as exc:  # noqa: BLE001 - any fault of the system (or its adapter) is the backend's
            self.faults.append(("probe", f"{type(exc).__name__}: {exc}"))
        cid = case.checkpoint_id
        if self.probe_reach and cid in self.checkpoints:
            if cid not in self._reached:
                self._reached[cid] = ([], {})
                try:
                    self._reached[cid] = system_probes.unreachable(self.backend, state, self.checkpoints[cid], self.k)
                except Exception as exc:  # noqa: BLE001 - as above
                    self.faults.append(("probe", f"{type(exc).__name__}: {exc}"))
            found, seen = self._reached[cid]
            if found:
                out["unreachable"] = found
            if seen:
                out["probed"] = dict(seen)
        return out or None

    def _listing(self, case: FuzzCase, state: StateHandle) -> tuple[StoredMemory, ...]:
        """The state's list(), cached per state key like the validators' (a state key names its content)."""
        hit = self.listings.get(case.state_key)
        if hit is None:
            hit = self.listings[case.state_key] = tuple(self.backend.list(state))
        return hit

    def execute_parent(self, case: FuzzCase) -> tuple[Execution, bool]:
        """(execution, fresh): cached per (state, query text); ``fresh`` is False on a cache hit."""
        key = (case.state_key, case.query.text)
        if key in self._cache:
            return self._cache[key], False
        try:
            state = self.state_of(case)
        except BackendError as exc:  # the state could not be built or rebuilt: an error record, not a crash
            ex = Execution(case_id=case.id, state_key=case.state_key, query=case.query.text,
                           error=f"{type(exc).__name__}: {exc}")
            return ex, True
        ex = self.execute(case, state)
        if ex.error is None:
            self._cache[key] = ex
        return ex, True

    def cached(self, case: FuzzCase) -> Execution | None:
        """The cached parent execution of ``case`` (by state and query text), or None."""
        return self._cache.get((case.state_key, case.query.text))

    def has_parent_execution(self, case: FuzzCase) -> bool:
        return (case.state_key, case.query.text) in self._cache

    def remember(self, case: FuzzCase, ex: Execution) -> None:
        """Cache a mutant's execution: when it becomes a parent it is not re-run."""
        if ex.error is None:
            self._cache[(case.state_key, case.query.text)] = ex

    # -- resume snapshots -----------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What a resumed campaign needs to behave as this one: the parent executions it would not re-run.
        Live states are not kept: they are rebuilt from their recipes when first used."""
        return {"cache": self._cache}

    def restore(self, state: dict[str, Any]) -> None:
        self._cache = state["cache"]

    def close(self) -> None:
        for handle in list(self._states.values()):
            self._release_quietly(handle)
        self._states.clear()
        self._live.clear()
