"""Expectations per level: is one execution's memory use consistent with its reference?

The reference carries what is operator-specific — each operator derives its mutant's reference from the
verified state change or query change (an update's new value and superseded evidence, a delete's deleted
history, an unsupported target's abstention with the parent's evidence as decoy) — so the checks are the same for
every operator and depend only on the level. Each check is one module of :mod:`ufuzz.oracles.checks` (its kind,
its order, when it could fail, what it finds); this module computes once per execution what a level's checks
see and gives the first failing check's verdict:

* **selection** (judged whenever retrieval is visible: the ranked top-k ids; a result is the memory its text is,
  whatever id it came under: :mod:`ufuzz.engine.identify`; a version an in-place update overwrote counts as
  invalidated): ``deleted_evidence_retrieved``, ``missing_evidence``, ``stale_ranked_above_valid``,
  ``unsupported_retrieved`` (only where the backend declares its own relevance threshold, and then only results
  scored at or above it count as retrieved at all).
* **response** (judged only when the system under test responded — its own answer, or an answerer the user
  configured): ``false_abstention``, ``stale_answer`` (an out-of-date or deleted value), ``unsupported_answer`` (a
  factual answer where the reference abstains), ``wrong_answer``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ufuzz.model import Execution, Reference
from ufuzz.model.execution import OVERWRITTEN
from ufuzz.oracles.checks import Responded, Selected, checks_of
from ufuzz.oracles.checks.base import LEVELS
from ufuzz.oracles.matching import Abstention, contains_answer, is_abstention

SELECTION, RESPONSE = LEVELS
#: the level of a state operation's side effect, found by its verification before any retrieval
#: (:mod:`ufuzz.operators.sideeffects`); never a level an execution is judged at
STATE = "state"
SELECTION_KINDS = tuple(c.name for c in checks_of(SELECTION))
RESPONSE_KINDS = tuple(c.name for c in checks_of(RESPONSE))
KINDS = SELECTION_KINDS + RESPONSE_KINDS

#: a response judge: (question, reference answer or None for abstention, response[, rubric=...]) ->
#: Correct|Hallucination|Omission. ``rubric`` (``{"must_include": [...], "must_not_include": [...]}``) is
#: passed only to a judge that declares a ``rubric`` parameter (e.g. :meth:`ufuzz.llm.uses.Judge.label`).
JudgeFn = Callable[..., str]


@dataclass(frozen=True)
class Outcome:
    """The verdict of one level on one execution."""

    passed: bool
    level: str
    kind: str | None = None
    offending: tuple[str, ...] = ()  # the memories at fault (invalid ones ranked high, the one answered from)
    detail: dict[str, Any] = field(default_factory=dict)


def selected(ex: Execution, threshold: float | None) -> list[str]:
    """The ids the system handed on: its top-k, cut at its own relevance threshold when it declares one."""
    if threshold is None:
        return list(ex.top_ids)
    return [i for i, s in zip(ex.top_ids, ex.top_scores) if s >= threshold]


def selection(ref: Reference, ex: Execution, deleted: tuple[str, ...] = (),
              threshold: float | None = None) -> Outcome:
    """The selection-level verdict (visible retrieval only): the first selection check that fails."""
    top = selected(ex, threshold)
    info = {"top_ids": list(ex.top_ids), "selected": top, "threshold": threshold}
    supporting = set(ref.supporting)
    seen = Selected(ref, top, frozenset(deleted), frozenset(set(ref.invalidated) | _overwritten(top, ref)),
                    [r for r, i in enumerate(top) if i in supporting], threshold)
    for check in checks_of(SELECTION):
        offending = check.find(seen)
        if offending is not None:
            return Outcome(False, SELECTION, check.name, tuple(offending), info)
    return Outcome(True, SELECTION, detail=info)


def current_kind(level: str, kind: str, offending: Iterable[str] = ()) -> str:
    """``kind`` as this version names it. Before 2026-12-06 an invalidated memory retrieved while no supporting one
    was, was recorded as ``missing_evidence`` with that memory as offending; it is ``stale_ranked_above_valid`` now
    (this version's ``missing_evidence`` never has an offending memory), so a corpus or baseline written before
    is matched by what its failure is, not by its old name."""
    if level == SELECTION and kind == "missing_evidence" and tuple(offending):
        return "stale_ranked_above_valid"
    return kind


def _overwritten(top: list[str], ref: Reference) -> set[str]:
    """Results identified as a version an in-place update overwrote (``m3@overwritten``, see
    :mod:`ufuzz.engine.identify`) of a memory this question's reference names: out-of-date evidence of it."""
    named = set(ref.supporting) | set(ref.invalidated)
    return {i for i in top if i.endswith(OVERWRITTEN) and i[:-len(OVERWRITTEN)] in named}


def _takes_rubric(judge: JudgeFn) -> bool:
    try:
        params = inspect.signature(judge).parameters.values()
    except (TypeError, ValueError):  # a callable without an inspectable signature
        return False
    return any(p.name == "rubric" or p.kind is p.VAR_KEYWORD for p in params)


def _judge_label(judge: JudgeFn, question: str, ref: Reference, response: str) -> str:
    """The judge's label for ``response``, with the reference's rubric when it has one and the judge takes
    it (a three-argument judge is called as before)."""
    if ref.rubric and _takes_rubric(judge):
        return judge(question, ref.answer, response, rubric=ref.rubric.to_dict())
    return judge(question, ref.answer, response)


def _carriers(ex: Execution, values: list[str]) -> tuple[str, ...]:
    """The retrieved memories whose text carries one of ``values`` (what a stale answer came from)."""
    return tuple(i for i, t in zip(ex.top_ids, ex.top_texts) if any(contains_answer(t, v) for v in values))


def response(ref: Reference, ex: Execution, judge: JudgeFn | None = None,
             abstention: Abstention | None = None) -> Outcome | None:
    """The response-level verdict, or None when the system under test gave no response.

    Without ``judge`` the response is matched as text (an accepted answer contained, abstention phrases).
    With a judge (``--llm-uses judge``) its label decides instead: Correct passes, Omission is an
    abstention, Hallucination a wrong (or, when a stale value appears, stale) answer. The reference's
    rubric, if any, goes to the judge only.
    """
    if ex.responder is None:
        return None
    resp = ex.response
    label = _judge_label(judge, ex.query, ref, resp or "") if judge is not None else None
    if label is None:
        right = not ref.abstain and any(contains_answer(resp, a) for a in (ref.answer, *ref.aliases) if a)
        abstained = is_abstention(resp, abstention)
    else:
        right = not ref.abstain and label == "Correct"
        abstained = label == "Omission" or (ref.abstain and label == "Correct")
    info = {"response": resp, "responder": ex.responder, "judge": label, "answer_correct": right}
    stale = [v for v in ref.stale_answers if contains_answer(resp, v)]
    seen = Responded(ref, right, abstained, stale, _carriers(ex, stale) if stale else (), tuple(ex.top_ids[:1]))
    if seen.passed:
        return Outcome(True, RESPONSE, detail=info)
    for check in checks_of(RESPONSE):
        offending = check.find(seen)
        if offending is not None:
            return Outcome(False, RESPONSE, check.name, tuple(offending), {**info, "stale": stale} if stale else info)
    return Outcome(True, RESPONSE, detail=info)
