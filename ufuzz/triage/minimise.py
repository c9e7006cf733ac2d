"""Minimising a failure: the smallest checkpoint and op sequence that still show it (``ufuzz minimise``).

Delta debugging (Zeller and Hildebrandt's *ddmin*) over two lists, one after the other: the checkpoint's
memories, then the state operations of the parent's recipe (shared with the mutant) and of the mutation. A
candidate *still shows the failure* when, replayed on a fresh state of the campaign's backend exactly as
``ufuzz replay`` does (:func:`ufuzz.triage.replay.replay_pair`), the parent passes and the mutant fails with the
same kind and level on the same offending memories (the same unique-failure key). ddmin returns a 1-minimal
set: removing any single remaining memory or op loses the failure.

What may be removed is limited to what the references do not talk about, so that the minimised pair is still a
true failure: the memories a reference needs or forbids (supporting, invalidated), the offending ones and the
targets of the kept operations stay, and only operations that touch none of those are candidates (the
operation that *is* the mutation — the update, the deletion — is the failure's cause and is never removed).
The result is a one-record regression corpus (:mod:`ufuzz.triage.corpusfile`) that ``ufuzz corpus check``
replays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ufuzz.backends.protocol import BackendError, BackendUnreachable, MemoryBackend
from ufuzz.corpus.campaign import CampaignData, select_failures
from ufuzz.model import Checkpoint, Fact, MutationDescriptor, StateOp
from ufuzz.oracles.expectations import STATE
from ufuzz.oracles.judging import Judging
from ufuzz.triage.corpusfile import (
    RegressionRecord,
    build_records,
    campaign_header,
    write_corpus,
)
from ufuzz.triage.replay import fresh_backend, replay_pair, replay_state

__all__ = ["ddmin", "Minimised", "ReplayFault", "minimise_record", "minimise_failure", "write_minimised"]

T = TypeVar("T")


def ddmin(items: Sequence[T], test: Callable[[list[T]], bool], *, budget: int | None = None) -> list[T]:
    """A 1-minimal sublist of ``items`` (order kept) for which ``test`` holds, assuming it holds for all of
    ``items``. ``budget`` caps the calls to ``test`` (then the smallest list found so far is returned)."""
    current = list(items)
    calls = 0
    n = 2
    while len(current) >= 2:
        size = math.ceil(len(current) / n)
        chunks = [current[i:i + size] for i in range(0, len(current), size)]
        reduced = False
        # complements first: with most candidates irrelevant, dropping a chunk is the likely win
        for i in range(len(chunks)):
            if budget is not None and calls >= budget:
                return current
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            calls += 1
            if test(complement):
                current, n, reduced = complement, max(n - 1, 2), True
                break
        if reduced:
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    if len(current) == 1 and (budget is None or calls < budget) and test([]):
        return []
    return current


@dataclass
class Minimised:
    record: RegressionRecord
    checkpoint: Checkpoint
    descriptor: MutationDescriptor
    memories_before: int
    memories_after: int
    ops_before: int
    ops_after: int
    tests: int

    def to_dict(self) -> dict[str, Any]:
        return {"failure_key": self.record.failure_key, "tests": self.tests,
                "memories": {"before": self.memories_before, "after": self.memories_after},
                "ops": {"before": self.ops_before, "after": self.ops_after}}


def _mentioned(rec: RegressionRecord) -> set[str]:
    """Memory ids the references, the verdict and the mutation's own ops talk about (never removed)."""
    ids = set(rec.offending)
    for side in (rec.parent, rec.mutant):
        ids |= set(side.reference.supporting) | set(side.reference.invalidated)
    return ids


def _touches(op: StateOp) -> set[str]:
    return {x for x in (op.target, op.memory.id if op.memory else None) if x}


def _subset_checkpoint(cp: Checkpoint, keep: set[str], new_id: str) -> Checkpoint:
    """``cp`` with only the memories in ``keep``; facts keep only evidence still present."""
    facts = []
    for f in cp.facts:
        ev = tuple(e for e in f.evidence if e in keep)
        if ev:
            facts.append(Fact(entity=f.entity, attribute=f.attribute, value=f.value, evidence=ev, valid=f.valid,
                              value_type=f.value_type, valid_from=f.valid_from))
    return Checkpoint(id=new_id, memories=tuple(m for m in cp.memories if m.id in keep), facts=tuple(facts),
                      entities=cp.entities)


class ReplayFault(BackendError):
    """Replaying the failure as recorded met a backend fault (the product down, a call failing): whether it still
    reproduces is unknown — never reported as "does not reproduce"."""


class _Trial:
    """Replays candidates of one record on one backend and counts them."""

    def __init__(self, backend: MemoryBackend, rec: RegressionRecord, cp: Checkpoint, desc: MutationDescriptor,
                 k: int, judging: Judging) -> None:
        self.backend, self.rec, self.cp, self.desc, self.k = backend, rec, cp, desc, k
        self.responder, self.context = judging.build(backend)
        self.tests = 0
        self.fault: str | None = None  # the last backend fault a replay met (then it showed nothing)
        self._memo: dict[tuple[frozenset[str], tuple[int, ...]], bool] = {}

    def candidate(self, keep: set[str], ops: tuple[int, ...], cp_id: str) -> tuple[RegressionRecord, Checkpoint]:
        """The record on the checkpoint subset ``keep`` with only the ops at indexes ``ops`` of the mutant's
        recipe (the parent keeps those of its prefix)."""
        n_parent = len(self.rec.parent.ops)
        m_ops = tuple(self.rec.mutant.ops[i] for i in ops)
        p_ops = tuple(self.rec.mutant.ops[i] for i in ops if i < n_parent)
        cp = _subset_checkpoint(self.cp, keep, cp_id)
        rec = replace(self.rec, checkpoint_id=cp.id, parent=replace(self.rec.parent, ops=p_ops),
                      mutant=replace(self.rec.mutant, ops=m_ops))
        return rec, cp

    def shows_failure(self, keep: set[str], ops: tuple[int, ...]) -> bool:
        memo_key = (frozenset(keep), ops)
        if memo_key not in self._memo:
            self.tests += 1
            rec, cp = self.candidate(keep, ops, f"{self.cp.id}-t{self.tests}")
            parent, mutant = rec.cases(cp, self.desc)
            try:
                if rec.stage == STATE:  # a side effect or an unread write: re-run as the operation's check saw it
                    res = replay_state(self.backend, {cp.id: cp}, parent, mutant, failure_key=rec.failure_key,
                                       kind=rec.kind, target=rec.target, seed_id=rec.seed_id, operator=rec.operator,
                                       k=self.k)
                else:
                    res = replay_pair(self.backend, {cp.id: cp}, parent, mutant, rec.parent.reference,
                                      rec.mutant.reference, k=self.k, failure_key=rec.failure_key, kind=rec.kind,
                                      stage=rec.stage, target=rec.target, seed_id=rec.seed_id,
                                      operator=rec.operator, responder=self.responder, context=self.context)
                self._memo[memo_key] = res.status == "reproduced" and res.same_key
                if res.status == "error":  # the backend failed the replay: nothing was learnt of the candidate
                    self.fault = res.reason
            except BackendUnreachable:
                raise  # a product that is down says nothing of the candidate: never "does not reproduce"
            except BackendError as exc:
                self._memo[memo_key] = False
                self.fault = str(exc)
        return self._memo[memo_key]


def minimise_record(backend: MemoryBackend, rec: RegressionRecord, checkpoint: Checkpoint,
                    descriptor: MutationDescriptor, k: int, *, judging: Judging | None = None,
                    max_tests: int = 1000) -> Minimised:
    """Minimise one failure record on ``backend``, judged as its campaign judged it (``judging``: responder and
    judge; default none). Raises ValueError when the record does not reproduce as it is (nothing to minimise)."""
    trial = _Trial(backend, rec, checkpoint, descriptor, k, judging or Judging())
    all_ops = tuple(range(len(rec.mutant.ops)))
    all_mems = {m.id for m in checkpoint.memories}
    if not trial.shows_failure(all_mems, all_ops):
        if trial.fault is not None:  # a product that is down or failing is no failure that stopped reproducing
            raise ReplayFault(f"replaying failure {rec.failure_key} as recorded met a backend fault, so nothing was "
                              f"minimised: {trial.fault}")
        raise ValueError(f"failure {rec.failure_key} does not reproduce on a fresh backend as recorded, so it "
                         "cannot be minimised (`ufuzz replay DIR --key KEY` says why)")
    mentioned = _mentioned(rec)
    own = range(len(rec.parent.ops), len(all_ops))  # the mutation's own ops: its update or delete is the cause
    pinned_ops = [i for i in all_ops
                  if (_touches(rec.mutant.ops[i]) & mentioned) or (i in own and rec.mutant.ops[i].op != "add")]
    targets = {t for i in pinned_ops for t in _touches(rec.mutant.ops[i])}
    pinned = (mentioned | targets) & all_mems
    free = [m.id for m in checkpoint.memories if m.id not in pinned]
    left = max_tests - trial.tests
    kept = ddmin(free, lambda sub: trial.shows_failure(pinned | set(sub), all_ops), budget=left)
    keep = pinned | set(kept)
    free_ops = [i for i in all_ops if i not in pinned_ops]
    left = max(max_tests - trial.tests, 0)
    kept_ops = ddmin(free_ops, lambda sub: trial.shows_failure(keep, tuple(sorted([*pinned_ops, *sub]))),
                     budget=left)
    # an op may add a memory a later kept op needs: ddmin only keeps sets that replay, so this holds already
    ops = tuple(sorted([*pinned_ops, *kept_ops]))
    out, cp = trial.candidate(keep, ops, f"{checkpoint.id}-min")
    return Minimised(record=out, checkpoint=cp, descriptor=descriptor, memories_before=len(all_mems),
                     memories_after=len(cp.memories), ops_before=len(all_ops), ops_after=len(ops), tests=trial.tests)


def minimise_failure(data: CampaignData, key: str, *, workdir: str | Path | None = None,
                     max_tests: int = 1000) -> Minimised:
    """Minimise the campaign's failure ``key`` (a key or unique prefix) on a fresh instance of its backend."""
    f = select_failures(data.failures, [key])[0]
    records, skipped = build_records(data)
    rec = next((r for r in records if r.failure_key == f.failure_key), None)
    if rec is None:
        why = dict(skipped).get(f.failure_key, "it is not a mutant failure of the system under test")
        raise ValueError(f"failure {f.failure_key} cannot be rebuilt: {why}")
    seed = data.seeds.get(rec.seed_id)
    desc = seed.descriptor if seed is not None else MutationDescriptor()
    with fresh_backend(data.backend, data.backend_options, workdir, prefix="ufuzz-minimise-") as be:
        return minimise_record(be, rec, data.checkpoints[rec.checkpoint_id], desc, data.k,
                               judging=Judging.of(data.config), max_tests=max_tests)


def write_minimised(data: CampaignData, result: Minimised, output: str | Path) -> Path:
    """A self-contained one-record regression corpus of the minimised failure."""
    header = campaign_header(data, output, 1, "ufuzz minimise")
    header["minimised"] = result.to_dict()
    rec = result.record
    return write_corpus(output, header, [result.checkpoint],
                        [(rec.seed_id, result.checkpoint.id, result.descriptor)], [rec])
