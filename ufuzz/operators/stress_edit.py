"""Stress edit (opt-in): unrelated edits aimed at capacity, recency and ordering defects.

An unrelated edit (:mod:`ufuzz.operators.unrelated_edit`) picks its memory at random, so a defect that strikes
one particular memory — an index that evicts the *oldest* entry once it is full, a recency boost that breaks on
the *newest*, an ordering that trips over the first or last row — is reached only by chance (on the shipped
suite the oldest memory of a checkpoint is evidence for about one seed in a hundred). Its targets:

* ``add-burst``: as many neutral memories as the checkpoint holds (at most :data:`MAX_BURST`), each later than
  everything stored: a state twice its built size, past any capacity fixed at build time;
* ``update-oldest`` / ``update-newest``: an unrelated fact of the oldest / newest memory (by stored timestamp)
  that an update can rewrite, rewritten;
* ``delete-oldest`` / ``delete-newest``: the oldest / newest memory that evidences nothing about the question.

The expected behaviour is the parent's (same reference); what the edit must leave alone is checked as for any
unrelated edit, and anything else it changes is a state-level failure (:mod:`ufuzz.operators.sideeffects`).
It is opt-in (``--strategy stress``): part of the default campaign it would change the shipped figures.
"""

from __future__ import annotations

import random

from ufuzz.model import FuzzCase, Memory, Reference, StateOp
from ufuzz.operators.base import Mutation, Rejected, StateView, Verdict
from ufuzz.operators.statewrite import later_timestamp, substitute, write_add, write_update
from ufuzz.operators.unrelated_edit import NEUTRAL, UnrelatedEdit

#: adds of one burst at most (a long conversation's checkpoint holds hundreds of memories)
MAX_BURST = 32


class StressEdit(UnrelatedEdit):
    name = "stress_edit"
    kind = "state"
    order = 65
    meaning_preserving = True
    opt_in = True

    def targets(self, case: FuzzCase) -> list[str]:
        if not case.descriptor.allows("unrelated_edit"):
            return []
        out = ["add-burst"]
        if next(self._iter_update_candidates(case, first=True), None) is not None:
            out += ["update-oldest", "update-newest"]
        if next(self._iter_unrelated_memories(case), None) is not None:
            out += ["delete-oldest", "delete-newest"]
        return out

    def varies(self, case: FuzzCase, target: str) -> bool:
        return target == "add-burst"  # the neutral texts are drawn; the oldest and newest are what they are

    @staticmethod
    def _by_age(view: StateView, ids: list[str], newest: bool) -> str:
        stamps = {m.id: m.timestamp for m in view.list()}
        ranked = sorted((i for i in ids if i in stamps), key=lambda i: (stamps[i], i))
        if not ranked:
            raise Rejected("none of the candidate memories is stored")
        return ranked[-1] if newest else ranked[0]

    def mutate(self, case: FuzzCase, parent_ref: Reference, target: str, rng: random.Random,
               view: StateView | None = None) -> Mutation:
        if view is None:
            raise Rejected("stress edit needs a state")
        what, _, which = target.partition("-")
        if target == "add-burst":
            return self._burst(case, parent_ref, rng, view)
        if which not in ("oldest", "newest") or what not in ("update", "delete"):
            raise Rejected(f"unknown stress-edit target {target!r}")
        newest = which == "newest"
        tag = f"{case.depth + 1}{rng.randrange(1 << 16):04x}"
        if what == "delete":
            mid = self._by_age(view, self._unrelated_memories(case), newest)
            res = view.delete(mid)
            if not res.ok:
                raise Rejected(f"backend refused delete: {res.detail}")
            return Mutation(query=case.query, provenance=case.provenance.with_deletion([mid]), reference=parent_ref,
                            ops=(StateOp("delete", mid),), results=(res,), detail=f"deleted the {which} {mid}")
        cands = {mid: (fact, alts) for fact, mid, alts in self._update_candidates(case)}
        mid = self._by_age(view, sorted(cands), newest)
        fact, alts = cands[mid]
        value = alts[0]
        text = substitute(dict(case.provenance.memory_texts)[mid], fact.value, value)
        ts = later_timestamp(view, before=case.query.asked_at)
        mem = Memory(id=f"{mid}~e{tag}", text=text, timestamp=ts, metadata={"ufuzz_op": "stress_update"})
        res, prov = write_update(view, case.provenance, mid, mem, fact.entity, fact.attribute, value)
        return Mutation(query=case.query, provenance=prov, reference=parent_ref, ops=(StateOp("update", mid, mem),),
                        results=(res,), detail=f"{which} {mid}: {fact.entity}.{fact.attribute} -> {value}")

    def _burst(self, case: FuzzCase, parent_ref: Reference, rng: random.Random, view: StateView) -> Mutation:
        n = max(1, min(MAX_BURST, len(case.provenance.memory_ids)))
        tag = f"{case.depth + 1}{rng.randrange(1 << 16):04x}"
        order = rng.sample(range(len(NEUTRAL)), len(NEUTRAL))
        ops, results, prov = [], [], case.provenance
        for i in range(n):
            text = NEUTRAL[order[i % len(NEUTRAL)]]
            if i >= len(NEUTRAL):
                text = f"{text[:-1]} (note {i // len(NEUTRAL) + 1})."
            mem = Memory(id=f"{case.checkpoint_id}~b{tag}-{i}", text=text,
                         timestamp=later_timestamp(view, before=case.query.asked_at),
                         metadata={"ufuzz_op": "stress_add"})
            res, prov = write_add(view, prov, mem, f"add {i + 1} of {n}")
            ops.append(StateOp("add", None, mem))
            results.append(res)
        return Mutation(query=case.query, provenance=prov, reference=parent_ref, ops=tuple(ops),
                        results=tuple(results), detail=f"added {n} neutral memories")

    def validate(self, case: FuzzCase, mutation: Mutation, view: StateView | None = None) -> Verdict:
        verdict = super().validate(case, mutation, view)  # query-relevant evidence untouched; the first edit
        if not verdict.ok:
            return verdict
        for res in mutation.results[1:]:
            if not res.ok:
                return Verdict.reject("backend did not report every add")
            for wid in res.written:
                if view.get(wid) is None:
                    return Verdict.reject(f"written memory {wid} is not stored")
        return Verdict.accept(*verdict.checks, f"{len(mutation.ops)} edit(s) stored")
