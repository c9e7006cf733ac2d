"""The oracle side of a campaign: references and verdicts, kept apart from the scheduler.

References enter only here (``add_seed``, ``register``); failures leave only to the failure store (``sink``).
Nothing here returns a reference or a failure to the engine's scheduling path: ``check`` returns just the
failure key (for live counts) — the scheduler module cannot import this package (a test enforces it).

Verdicts come from :mod:`ufuzz.oracles.verdict`, the functions ``replay`` and ``corpus check`` use too. A
seed that fails its own reference is a **baseline failure**, recorded once per seed. A mutant's failure is
reported only at a level where its parent passes; and a query mutant that asks exactly a seed's question (same
answer-affecting fields) on its parent's state — the checkpoint's own, or one its ancestors changed — and fails as
that seed fails on the checkpoint's own state is that seed's baseline failure, not one the mutation caused. A
state mutant whose question is a rewording of its seed's, failing to retrieve checkpoint memories that the same
words miss on the checkpoint's own state too, failed by its wording, not by its state change (``Oracle._control``);
so did a question mutant asking a seed's question in other words of that seed's own (a target change keeping its
parent's opening, or wording a sibling question anew) where that seed as worded passes (:func:`_rewords`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ufuzz._util.lru import LRU
from ufuzz.model import CONTROL_SUFFIX, Execution, FuzzCase, Reference
from ufuzz.oracles.accuracy import benchmark_accuracy
from ufuzz.oracles.checks import checks_of
from ufuzz.oracles.expectations import RESPONSE, SELECTION, Outcome, selection
from ufuzz.oracles.verdict import (
    Context,
    Failure,
    _roots,  # the offending memories as their cause key writes them
    baseline_failure,
    caused,
    deleted_by,
    failure,
    first_failure,
    judge_case,
    probe_failures,
    root_id,
    state_failure,
)

#: runs (or returns the cached) execution of a seed case by id; None when it could not run
SeedRunner = Callable[[str], Execution | None]

#: runs (or returns the cached) execution of a case on its checkpoint's own state (no operations) — a control; None
#: when it could not run
CaseRunner = Callable[[FuzzCase], Execution | None]

#: parents' verdicts kept; an evicted one is judged again (a pure function of reference and execution)
MAX_PARENT_VERDICTS = 16384


def could_fail(mutant: FuzzCase, reference: Reference, responds: bool, context: Any,
               on_parent_state: bool = False) -> bool:
    """Whether some check of ``mutant`` with ``reference`` can fail under ``context`` (a verdict context: is
    retrieval visible, the backend's relevance threshold): some check of a level judged here says it could
    (:meth:`~ufuzz.oracles.checks.base.Check.could_fail`). A pure function, so that a lane that made a state
    mutant (:mod:`ufuzz.engine.parallel.core`) decides as the campaign would whether executing it is worth the call.
    An abstaining reference without a threshold or a responder is judged only on whether a deleted memory is
    retrieved. ``on_parent_state``: the mutation wrote nothing (a new question on its parent's state) — then the
    parent's execution checked those deletions already on that very state, and a new question tests little; a
    mutant whose own writes made a new state (which may bring a deleted memory back) is executed for them."""
    deleted = () if on_parent_state else deleted_by(mutant)
    levels = ([SELECTION] if context.visible else []) + ([RESPONSE] if responds else [])
    return any(c.could_fail(reference, deleted, context.threshold) for level in levels for c in checks_of(level))


class Oracle:
    def __init__(self, sink: Callable[[Failure, Reference], None], context: Context | None = None,
                 reference_sink: Callable[[str, Reference], None] | None = None) -> None:
        self.context = context or Context()
        self._sink = sink
        self._reference_sink = reference_sink
        self._refs: dict[str, Reference] = {}
        # parents' verdicts by (case, state), bounded
        self._levels: LRU[tuple[str, str], dict[str, Outcome]] = LRU(MAX_PARENT_VERDICTS)
        self._seeds: dict[str, FuzzCase] = {}
        self._twins: dict[tuple[str, str, str, str, bool], str] = {}  # (checkpoint, fields) -> seed id
        self.seed_baseline_failures: dict[str, Outcome] = {}
        #: each seed's response-level verdict under its benchmark's criterion (seeds whose reference names one)
        self.seed_responses: dict[str, dict[str, Any]] = {}
        #: every failure recorded so far (mutant and baseline) by what was observed (:func:`_observation`)
        self._observed: dict[tuple[Any, ...], str] = {}
        self._probe_keys: set[str] = set()  # the system probes' findings recorded so far

    # -- resume snapshots -------------------------------------------------------------------------------
    _STATE = ("_refs", "_levels", "_seeds", "_twins", "seed_baseline_failures", "seed_responses", "_observed",
              "_probe_keys")

    def snapshot(self) -> dict[str, Any]:
        """The oracle's data (references, parents' verdicts, seeds, baseline failures), for a resume
        snapshot; the sinks and the judging context are the campaign's and are not included."""
        return {name: getattr(self, name) for name in self._STATE}

    def restore(self, state: dict[str, Any]) -> None:
        for name in self._STATE:
            if name in state:  # a snapshot written before a key existed leaves its default
                setattr(self, name, state[name])

    # -- references -------------------------------------------------------------------------------------
    def add_seed(self, case: FuzzCase, reference: Reference) -> None:
        """A seed case and its reference."""
        self._seeds[case.id] = case
        f = case.query.fields
        self._twins.setdefault((case.checkpoint_id, f.entity, f.attribute, f.scope, f.answerable), case.id)
        self.register(case.id, reference)

    def register(self, case_id: str, reference: Reference) -> None:
        """Take a case's reference (and persist it to the oracle side's own table)."""
        self._refs[case_id] = reference
        if self._reference_sink is not None:
            self._reference_sink(case_id, reference)

    def forget(self, case_id: str) -> None:
        self._refs.pop(case_id, None)

    def knows(self, case_id: str) -> bool:
        return case_id in self._refs

    def reference_of(self, case_id: str) -> Reference:
        """Operators derive child references from a parent's; only the campaign's mutation path calls this."""
        return self._refs[case_id]

    # -- verdicts ---------------------------------------------------------------------------------------
    def levels_of(self, case: FuzzCase, ex: Execution) -> dict[str, Outcome]:
        """A parent's verdict per level (cached per state); a seed failing its own reference is recorded as
        a baseline failure the first time."""
        key = (case.id, ex.state_key)
        levels = self._levels.get(key)
        if levels is None:
            levels = self._levels[key] = judge_case(case, self._refs[case.id], ex, self.context)
            bad = first_failure(levels)
            if case.parent_id is None:
                self._seed_response(case, levels)
            if case.parent_id is None and ex.probes:
                self._probed(case, ex)
            if case.parent_id is None and bad is not None and case.id not in self.seed_baseline_failures:
                self.seed_baseline_failures[case.id] = bad
                f = baseline_failure(case, bad, ex, "the seed fails its own reference")
                self._observed.setdefault(_observation(case, self._refs[case.id], ex, bad), f.key)
                self._sink(f, self._refs[case.id])
        return levels

    def _probed(self, case: FuzzCase, ex: Execution) -> None:
        """Record what the system probes saw on a seed's execution (:func:`probe_failures`), each finding once."""
        for f in probe_failures(case, ex):
            if f.key not in self._probe_keys:
                self._probe_keys.add(f.key)
                self._sink(f, self._refs[case.id])

    def _seed_response(self, case: FuzzCase, levels: dict[str, Outcome]) -> None:
        """Note a seed's response verdict when its reference carries a benchmark's criterion: what the
        benchmark's own accuracy on the seeds is counted from (:func:`benchmark_accuracy`)."""
        ref, out = self._refs[case.id], levels.get("response")
        rubric = ref.rubric
        if out is None or rubric is None or not rubric.benchmark or case.id in self.seed_responses:
            return
        self.seed_responses[case.id] = {"benchmark": rubric.benchmark, "question_type": rubric.question_type,
                                        "abstain": ref.abstain, "correct": out.passed,
                                        "label": out.detail.get("judge")}

    def benchmark_accuracy(self) -> dict[str, Any]:
        """The benchmarks' own accuracy on the seeds judged so far (:func:`benchmark_accuracy`)."""
        return benchmark_accuracy(self.seed_responses.values(), llm_judge=self.context.judge is not None,
                                  seeds=self._seeds_by_benchmark())

    def _seeds_by_benchmark(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for sid in self._seeds:
            rubric = self._refs[sid].rubric if sid in self._refs else None
            if rubric is not None and rubric.benchmark:
                out[rubric.benchmark] = out.get(rubric.benchmark, 0) + 1
        return out

    def testable(self, parent: FuzzCase, parent_ex: Execution) -> bool:
        """Whether a mutant of ``parent`` could show a failure its mutation caused: the parent passes at least
        one level it is judged at (a mutant failure is reported only where the parent passes). A seed that
        fails is recorded as a baseline failure (by :meth:`levels_of`)."""
        if parent_ex.error is not None:
            return False
        return any(o.passed for o in self.levels_of(parent, parent_ex).values())

    def can_fail(self, mutant: FuzzCase, reference: Reference, responds: bool,
                 on_parent_state: bool = False) -> bool:
        """Whether some check of ``mutant`` with ``reference`` can fail: a response is judged when the system
        responds (``responds``); at the selection level an answerable reference always can, an abstaining one
        only against the backend's own relevance threshold or when the mutant's state deleted memories and is
        its own (see :func:`could_fail`)."""
        return could_fail(mutant, reference, responds, self.context, on_parent_state)

    def _twin(self, mutant: FuzzCase, parent: FuzzCase) -> FuzzCase | None:
        """The seed asking ``mutant``'s question on its checkpoint's unmutated state, if any (and not its parent),
        for a mutant whose mutation changed only the question.

        Its state may carry its ancestors' operations (a sibling question asked after an unrelated update): then
        the seed is its twin only when the mutation changed the question's fields (a rewording of its parent has
        the parent as its control) and both references name the same evidence — the same question about the
        same memories fails the same way on the unmutated state whatever the operations did, so the failure is
        that seed's own (its baseline), one bug reported once; about other memories (the new value of an
        update) it is another test."""
        if mutant.ops != parent.ops:
            return None
        f = mutant.query.fields
        sid = self._twins.get((mutant.checkpoint_id, f.entity, f.attribute, f.scope, f.answerable))
        if sid is None or sid == parent.id:
            return None
        if mutant.ops:
            mine, theirs = self._refs[mutant.id], self._refs[sid]
            if f == parent.query.fields or (set(mine.supporting), set(mine.invalidated)) != \
                    (set(theirs.supporting), set(theirs.invalidated)):
                return None
        return self._seeds[sid]

    def state_failure(self, mutant: FuzzCase, parent: FuzzCase, finding: Any,
                      parent_ex: Execution | None = None, reference: Reference | None = None) -> str:
        """Record a failure of the state level: what a state mutant's verification saw the system change beyond
        its operation (the mutant is then no test), or a write it could not read back (the mutant stays a test:
        ``reference`` is its own). Returns the failure key."""
        f = state_failure(mutant, parent, finding, parent_ex)
        ref = reference if reference is not None else self._refs.get(parent.id)
        if ref is not None and self._reference_sink is not None:  # kept with the mutant so that the failure can be
            self._reference_sink(mutant.id, ref)  # exported and shown (a state failure is never judged by it)
        self._sink(f, ref)
        return f.key

    def _words_on_checkpoint(self, mutant: FuzzCase, twin: FuzzCase, run_case: CaseRunner | None) -> Outcome | None:
        """``mutant``'s words asked on the checkpoint's own state (a control), judged at the selection level against
        ``twin``'s reference, which names the mutant's evidence (:meth:`_twin`); no judge is called. None: the
        control could not run."""
        control_ex = _run_control(replace(twin, id=mutant.id + CONTROL_SUFFIX, query=mutant.query), run_case)
        return None if control_ex is None else selection(self._refs[twin.id], control_ex,
                                                         threshold=self.context.threshold)

    @staticmethod
    def _update_superseded(mutant: FuzzCase, parent: FuzzCase, out: Outcome) -> bool:
        """Whether a question mutant (the state is its parent's) ranks above the current memory a version that an
        update of its own chain superseded: the system keeps superseded versions searchable and ranks them by
        their words, a defect of its updates that the update operator reports where an update's own question tips
        the near tie of old and new text — a rewording that tips it (a hand audit, LongMemEval: a margin of 0.003)
        is that defect again, not a new cause of the rewording's. Not reported: where only rewordings tip such a
        tie, the defect goes unseen (recall given for precision: re-attributing it to the update would need replay
        to know of the attribution)."""
        if out.kind != "stale_ranked_above_valid" or mutant.ops != parent.ops or not out.offending:
            return False
        # every memory at fault one of the very versions the chain's updates replaced (not what they wrote: a
        # question about the value *before* the update ranking the new value first is the time scope's defect;
        # nor an out-of-date memory of the checkpoint's own, which is the rewording's finding)
        return set(out.offending) <= {op.target for op in mutant.ops if op.op == "update" and op.target}

    def _control(self, mutant: FuzzCase, parent: FuzzCase, ref: Reference, ex: Execution,
                 out: Outcome) -> tuple[FuzzCase, frozenset[str]] | None:
        """The question to ask on the checkpoint's own state before a state mutation is blamed for evidence not
        retrieved, and the evidence concerned: for a state mutant (its mutation changed the state) whose question
        is its seed's question reworded (the same fields, other words) and that misses supporting memories of the
        checkpoint itself (an operation writes memories of ids of their own, so these hold the checkpoint's text
        in any state). Its seed's reference holds for those words on that state. A
        hand audit (LoCoMo) found a delete blamed for a rewording's miss: an update and then a delete of what it
        wrote returned a reworded question to the checkpoint's memories, which those words never retrieved."""
        if mutant.ops == parent.ops or out.level != "selection" or out.kind != "missing_evidence":
            return None
        seed = self._seeds.get(mutant.seed_id)
        if seed is None or mutant.query.text == seed.query.text or mutant.query.fields != seed.query.fields:
            return None
        missing = frozenset(ref.supporting) - set(ex.top_ids)
        if not missing or any(root_id(m) != m for m in missing):  # (a write's memory has an id of its own)
            return None
        return replace(seed, id=mutant.id + CONTROL_SUFFIX, query=mutant.query), missing

    def _wording_fails(self, mutant: FuzzCase, parent: FuzzCase, ref: Reference, ex: Execution, out: Outcome,
                       run_case: CaseRunner | None) -> bool | None:
        """Whether the mutant's failure is its wording's (see :meth:`_control`): its words on the checkpoint's own
        state miss the same memories too (what was retrieved there, no verdict: no judge is called). None: no
        control applies; a control that could not run counts as the wording's (whether the state change caused it
        cannot be told: precision first). The wording's miss itself is then not reported here: it is a rewording
        of the seed that paraphrase may or may not have asked (recall given for precision)."""
        found = self._control(mutant, parent, ref, ex, out)
        if found is None:
            return None
        control, missing = found
        control_ex = _run_control(control, run_case)
        return control_ex is None or missing.isdisjoint(control_ex.top_ids)

    def check(self, mutant: FuzzCase, ex: Execution, parent: FuzzCase, parent_ex: Execution,
              run_seed: SeedRunner | None = None, run_case: CaseRunner | None = None) -> str | None:
        """Judge a mutant against its reference, given its parent's execution. Returns a failure key or None."""
        if ex.error is not None or parent_ex.error is not None:
            return None
        ref = self._refs[mutant.id]
        out = caused(self.levels_of(parent, parent_ex), judge_case(mutant, ref, ex, self.context))
        if out is None:
            return None
        twin = self._twin(mutant, parent)
        if twin is not None:
            twin_ex = run_seed(twin.id) if run_seed is not None else None
            if twin_ex is None or twin_ex.error is not None:
                return None  # whether the mutation caused it cannot be told: precision first
            same = self.levels_of(twin, twin_ex).get(out.level)
            if same is not None and not same.passed and same.kind == out.kind:
                return None  # the seed's own baseline failure, recorded there (also after an abstaining parent)
            if same is not None and same.passed and mutant.operator != "paraphrase" and _rewords(mutant, twin):
                # a seed's question in other words (in practice a target change onto it: its parent's "Quick
                # question:" kept, or a sibling question worded anew — "At what point in time" for "When"), and those
                # words miss what that seed as worded finds on the checkpoint's own state: the miss is the wording's,
                # which paraphrase tests on that seed — not the new target's (hand audits, LoCoMo: reported twice,
                # under two operators). The new target asked in words of the parent's (a name swapped into them)
                # stays the target change's test.
                if not mutant.ops:
                    return None  # (the state is the twin's: the failure itself shows the words miss there)
                if out.level != SELECTION:
                    return None  # (a control's response would call the judge: cannot tell, precision first)
                control = self._words_on_checkpoint(mutant, twin, run_case)
                if control is None or (not control.passed and control.kind == out.kind
                                       and _roots(control.offending) == _roots(out.offending)):
                    return None  # those words fail there too, the same way (or cannot tell): precision first
                if control.passed:  # the state its ancestors changed is what fails it, and the failure says so
                    out = _with_control(out, twin.id, mutant.query.text)
            if mutant.ops and same is not None and same.passed and twin.query.text == mutant.query.text:
                # the same question, word for word, passes on the unmutated state: what fails it is the state its
                # ancestors changed, not the new question (another wording could fail by itself) — said with the
                # failure (`failures show`), so that it is triaged as the state change's interference (its key and
                # class stay the operator's: the paper's unit)
                out = _with_control(out, twin.id, twin.query.text)
        if self._update_superseded(mutant, parent, out):
            return None  # the update's defect, which the update operator reports (its cause and class)
        if self._wording_fails(mutant, parent, ref, ex, out, run_case):
            return None  # the rewording's miss, not the state change's (the rewording is paraphrase's to report)
        parent_ref = self._refs.get(parent.id)
        if mutant.ops == parent.ops and parent_ref is not None and parent_ref.abstain and not ref.abstain:
            # a question made answerable by re-asking it (e.g. about the other speaker) on the same state: the
            # parent's pass was an abstention, which says nothing of finding this question's evidence — the new
            # question fails as asked on its parent's state, a baseline failure of that question where that state
            # is the checkpoint's own; on a state its ancestors changed (a delete of evidence it shares) it is no
            # seed's baseline (hand audit, LoCoMo: listed as a seed failing its own reference, which passes on the
            # checkpoint): where a control showed the question passes there, the state change fails it — a
            # failure of the mutant's, said so — else which of the two fails it cannot be told
            if not mutant.ops:
                b = baseline_failure(mutant, out, ex, "the question fails as asked on its parent's state (its parent "
                                                      "abstained: nothing of it was tested)")
                if self._observed.setdefault(_observation(mutant, ref, ex, out), b.key) == b.key:
                    self._sink(b, ref)  # not when it is a seed's own baseline failure seen again, word for word
                return None
            if "control" not in out.detail:
                return None
        f = failure(mutant, out, ex, parent_ex)
        seen = _observation(mutant, ref, ex, out)
        if self._observed.setdefault(seen, f.key) != f.key:
            return None  # the same question, retrieval and evidence failed the same way as another failure
        self._sink(f, ref)
        return f.key


def _run_control(control: FuzzCase, run_case: CaseRunner | None) -> Execution | None:
    """The execution of a control case, or None when it could not run (no runner, the budget spent, an error)."""
    ex = run_case(control) if run_case is not None else None
    return None if ex is None or ex.error is not None else ex


def _with_control(out: Outcome, seed_id: str, query: str) -> Outcome:
    """``out`` saying that ``query`` passes on the checkpoint's own state (``seed_id``'s reference): the state the
    mutant's ancestors changed is what fails it (`failures show` says so)."""
    return replace(out, detail={**out.detail, "control": {"seed": seed_id, "query": query, "level": out.level,
                                                          "passed": True}})


def _rewords(mutant: FuzzCase, twin: FuzzCase) -> bool:
    """Whether ``mutant`` asks ``twin``'s question in other words derived from the twin's own: its words inside
    other words (a parent's opening kept), or its obligation's target is that very question (a target change onto a
    sibling question, which it may also word anew) — not the twin's words themselves: the same question answered
    otherwise than for the seed is the system's doing (a result cache keyed without the names)."""
    text = mutant.query.text
    if text == twin.query.text:
        return False
    target = mutant.obligation.target.partition("=")[2] if mutant.obligation else ""
    return target == twin.query.text or _words_around(twin.query.text, text)


def _words_around(inner: str, outer: str) -> bool:
    """Whether ``outer`` is ``inner`` with words added around it (case and punctuation aside), not ``inner`` itself."""
    a, b = " ".join(re.findall(r"\w+", inner.lower())), " ".join(re.findall(r"\w+", outer.lower()))
    return bool(a) and a != b and f" {a} " in f" {b} "


def _observation(case: FuzzCase, ref: Reference, ex: Execution, out: Outcome) -> tuple[Any, ...]:
    """What a failure was seen as: the question asked, what came back (the ranked memories, the response), the
    evidence it was judged against and the verdict. Two failures alike in all of these are one observation
    however the chains that led to them differ — a reworded question that missed its evidence on the checkpoint,
    and the same question on a chain (update, then delete of what it wrote) that returned to the checkpoint's
    memories — so the second is not reported again (hand audit, LoCoMo: the delete was blamed for the
    rewording's miss)."""
    shown = set(ex.top_ids)  # an invalidated memory that was not retrieved (or no longer exists) played no part
    return (case.query.text, tuple(ex.top_ids), ex.response, frozenset(ref.supporting),
            frozenset(m for m in ref.invalidated if m in shown), ref.abstain, ref.answer, out.level, out.kind)
