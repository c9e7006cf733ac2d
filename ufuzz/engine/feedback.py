"""The campaign's feedback state: what it reached, and what its signals make of each execution.

Per campaign, a :class:`FeedbackState` tracks **retrieval coverage** — the set of ``(checkpoint_id, memory_id)``
pairs that appeared in any observed top-k; a mutant's *gain* counts only the checkpoint's own memories (once
:meth:`FeedbackState.track` named it): a memory an update or add wrote, retrieved, is what its operation says it
does, not a part of the memory reached (each write has a fresh id, so counting it gave every state mutant phase-2
energy and an "effect"); a version an in-place update wrote keeps its memory's id and counts as that memory.
Coverage is kept as a running count of checkpoint memories reached (:meth:`FeedbackState.reached`), so a campaign
reads it per step without rescanning, and it is measured whatever signal guides the campaign.

What guides the campaign are the **signals** (:mod:`ufuzz.engine.signals`, one module each: coverage,
unexpected selection, novelty, divergence): each execution is read by every active signal and their readings
combined (:class:`~ufuzz.engine.signals.Combined`: kept or not, energy, instability, effect). An ablation switches
a signal's guidance off (``FeedbackState(off=...)``): it is still observed and counts what it counts, and what was
reached is still recorded, so an ablated campaign is measured (``coverage_of``, ``totals``) on the same footing as
a full one.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ufuzz.engine import signals
from ufuzz.engine.signals import Combined, Observation, combine
from ufuzz.engine.signals.novelty import normalize_response, response_hash
from ufuzz.model import Checkpoint, Execution

__all__ = ["NO_FEEDBACK", "Coverage", "FeedbackState", "expected_top", "normalize_response", "response_hash"]


def expected_top(parent_top: Sequence[str], ops: Sequence[Any], results: Sequence[Any]) -> list[str]:
    """The parent's top-k as a mutant's own state operations predict it, from what the backend reported of them
    (``results``: :class:`~ufuzz.backends.protocol.OpResult`): a memory deleted, removed or marked superseded is
    gone, and the memory an update wrote takes its old version's place; anything else keeps its rank. Nothing
    here looks at a reference: it is the operation's own claim about the state."""
    moved: dict[str, str] = {}
    gone: set[str] = set()
    for op, res in zip(ops, results, strict=False):
        gone |= set(res.removed) | set(res.superseded)
        if op.op == "delete" and op.target:
            gone.add(op.target)
        elif op.op == "update" and op.target and res.written and op.target not in res.written:
            moved[op.target] = res.written[0]
    out: list[str] = []
    for i in parent_top:
        new = moved.get(i)
        if new is not None and new not in out:
            out.append(new)
        elif i not in gone and i not in out:
            out.append(i)
    return out


#: The feedback of an execution that gives none (it errored).
NO_FEEDBACK = Combined(values={}, retained=False, energy=1.0, instability=None)


@dataclass(frozen=True)
class Coverage:
    """Retrieval coverage of one checkpoint.

    ``reached`` counts distinct memory ids seen in any top-k; when the checkpoint itself was given,
    ``reached`` counts only its own memories (so ``reached <= total``) and ``extra`` counts ids reached that
    the checkpoint does not have (memories added by state mutants).
    """

    checkpoint_id: str
    reached: int
    total: int | None = None
    extra: int = 0

    @property
    def ratio(self) -> float | None:
        if self.total is None:
            return None
        return self.reached / self.total if self.total else 0.0


class FeedbackState:
    """Coverage and the signals of one campaign. Safe to call from several worker threads."""

    def __init__(self, off: Collection[str] = (), *, p: float = 0.9) -> None:
        self.signals = signals.active(off)
        self.guiding = [s for s in self.signals if s.name not in set(off)]  # the ablated ones measure only
        self.p = p
        self._lock = threading.Lock()
        self._covered: dict[str, set[str]] = defaultdict(set)  # checkpoint id -> memory ids reached
        self._observed = 0
        self._retained = 0
        self._errored = 0
        self._members: dict[str, frozenset[str]] = {}  # checkpoint id -> its own memory ids (see track)
        self._reached = 0  # checkpoint memories reached, over all tracked checkpoints

    def __getstate__(self) -> dict[str, Any]:  # resume snapshots: everything but the lock
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def track(self, checkpoints: list[Checkpoint]) -> None:
        """Count coverage of these checkpoints' own memories as it grows (:meth:`reached`)."""
        with self._lock:
            for cp in checkpoints:
                own = frozenset(m.id for m in cp.memories)
                self._members[cp.id] = own
                self._reached += len(self._covered.get(cp.id, set()) & own)

    def reached(self) -> int:
        """Checkpoint memories reached in any top-k, over the tracked checkpoints (memories added by mutants
        are not counted): the sum of ``coverage_of(cp).reached``, without a rescan."""
        return self._reached

    # ------------------------------------------------------------------ observing

    def observe(self, seed_id: str, checkpoint_id: str, execution: Execution,
                parent_execution: Execution | None = None, hidden: bool = False,
                p: float | None = None, expected: Sequence[str] | None = None, *,
                meaning_preserving: bool = False, unanswerable: bool = False,
                threshold: float | None = None) -> Combined:
        """Fold one execution into the state and say what the signals made of it.

        ``hidden`` means the backend does not expose its top-k: no coverage is reached, and the signals read a
        response. ``p`` is the RBO persistence for the divergence (default: the state's ``p``); ``expected``: the
        parent's top-k as the mutant's own state operations predict it (:func:`expected_top`).
        ``meaning_preserving``/``unanswerable``: the operator's claims about its mutation; ``threshold``: the
        backend's own relevance threshold. An execution with ``error`` set gives no feedback and leaves the state
        unchanged.
        """
        p = self.p if p is None else p
        if not 0.0 < p < 1.0:
            raise ValueError(f"RBO persistence p must lie strictly between 0 and 1, got {p!r}")
        with self._lock:
            if execution.error is not None:
                self._errored += 1
                return NO_FEEDBACK
            self._observed += 1
            gain = 0 if hidden else self._reach(checkpoint_id, execution)
            obs = Observation(seed_id=seed_id, checkpoint_id=checkpoint_id, execution=execution,
                              parent=parent_execution, expected=expected, gain=gain, hidden=hidden, p=p,
                              meaning_preserving=meaning_preserving, unanswerable=unanswerable, threshold=threshold)
            read = {s.name: s.observe(obs) for s in self.signals}  # every signal, so that each measures alike
            fb = combine([(s, read[s.name]) for s in self.guiding])
            self._retained += fb.retained
            return fb

    def _reach(self, checkpoint_id: str, execution: Execution) -> int:
        """Record the memories ``execution`` retrieved; how many of the checkpoint's own were reached for the first
        time (every new id where the checkpoint is not tracked)."""
        covered = self._covered[checkpoint_id]
        own = self._members.get(checkpoint_id)
        gain = 0
        for mid in execution.top_ids:
            if mid not in covered:
                covered.add(mid)
                if own is None or mid in own:
                    gain += 1
                    self._reached += own is not None
        return gain

    # ------------------------------------------------------------------ reading

    def coverage_of(self, checkpoint: Checkpoint | str) -> Coverage:
        """Coverage of one checkpoint (by object, for a total, or by id, for a count only)."""
        with self._lock:
            if isinstance(checkpoint, Checkpoint):
                reached = self._covered.get(checkpoint.id, set())
                own = {m.id for m in checkpoint.memories}
                return Coverage(checkpoint.id, len(reached & own), len(own), len(reached - own))
            return Coverage(str(checkpoint), len(self._covered.get(str(checkpoint), set())))

    def covered(self) -> frozenset[tuple[str, str]]:
        """Every ``(checkpoint_id, memory_id)`` pair reached so far."""
        with self._lock:
            return frozenset((c, m) for c, ids in self._covered.items() for m in ids)

    def totals(self) -> dict[str, int]:
        with self._lock:
            out = {
                "observed": self._observed,
                "errored": self._errored,
                "retained": self._retained,
                "coverage": sum(len(v) for v in self._covered.values()),
                "checkpoints_reached": sum(1 for v in self._covered.values() if v),
            }
            for s in self.signals:
                for k, v in s.totals().items():
                    if k in out:
                        raise ValueError(f"feedback signal {s.name!r} counts {k!r}, which is already counted")
                    out[k] = v
            return out
