"""Operator-specific expectations: is an execution's memory use consistent with its reference?

Two stages of failure are told apart:

* **selection** — visible in the ranked list alone: no supporting memory in the top-k
  (``missing_evidence``), an invalidated (stale, superseded) memory ranked above every supporting one
  (``stale_ranked_above_valid``), or a deleted memory returned at all (``deleted_evidence_retrieved``);
* **post-selection** — the ranked list is acceptable but the response is wrong: ``wrong_answer``,
  ``stale_answer`` (an out-of-date or deleted value), ``false_abstention`` (abstained although supported),
  ``unsupported_answer`` (a factual answer where the reference abstains).

For hidden-retrieval backends only the response is judged (stage ``response``).

A mutant *fails* when it violates its expectation while its parent satisfied its own: the failure is then
caused by the mutation. The unique-failure key is the hash of (seed, operator, obligation target, kind,
stage, offending memory ids with mutation-generated id suffixes normalised).
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ufuzz.model import Execution, Reference
from ufuzz.oracles.matching import contains_answer, is_abstention

KINDS = ("missing_evidence", "stale_ranked_above_valid", "deleted_evidence_retrieved", "wrong_answer",
         "stale_answer", "false_abstention", "unsupported_answer")


@dataclass(frozen=True)
class Outcome:
    passed: bool
    kind: str | None = None
    stage: str | None = None
    offending: tuple[str, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    key: str
    case_id: str
    seed_id: str
    operator: str
    target: str
    kind: str
    stage: str
    offending: tuple[str, ...]
    detail: dict[str, Any]


def _stale_in(response: str | None, ref: Reference) -> list[str]:
    return [v for v in ref.stale_answers if v != ref.answer and contains_answer(response, v)]


#: a response judge: (question, reference answer or None for abstention, response[, rubric=...]) ->
#: Correct|Hallucination|Omission. ``rubric`` (``{"must_include": [...], "must_not_include": [...]}``) is
#: passed only to a judge that declares a ``rubric`` parameter (e.g. :meth:`ufuzz.llm.uses.Judge.label`).
JudgeFn = Callable[..., str]


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


def evaluate(ref: Reference, ex: Execution, deleted: tuple[str, ...] = (), hidden: bool = False,
             judge: JudgeFn | None = None) -> Outcome:
    """Judge one execution against one reference.

    Without ``judge`` the response is matched as text (answer contained, abstention phrases). With a judge
    (an LLM judge, ``--llm-uses judge``) its label decides correctness instead: Correct passes, Omission is an
    abstention, Hallucination a wrong (or, when a stale value appears, stale) answer. The reference's
    rubric, if any, goes to the judge only; the offline matching ignores it.
    """
    resp = ex.response
    label = None
    if judge is not None and resp is not None:
        label = _judge_label(judge, ex.query, ref, resp)
    if label is None:
        answered_right = (not ref.abstain) and any(contains_answer(resp, a) for a in (ref.answer, *ref.aliases)
                                                   if a)
        abstained = is_abstention(resp)
    else:
        answered_right = (not ref.abstain) and label == "Correct"
        abstained = label == "Omission" or (ref.abstain and label == "Correct")
    info = {"response": resp, "top_ids": list(ex.top_ids), "answer_correct": answered_right, "judge": label}
    top = [] if hidden else list(ex.top_ids)
    gone = [i for i in top if i in set(deleted)]
    if gone:
        return Outcome(False, "deleted_evidence_retrieved", "selection", tuple(gone), info)
    if not ref.abstain and top:
        support = [r for r, i in enumerate(top) if i in set(ref.supporting)]
        invalid = [r for r, i in enumerate(top) if i in set(ref.invalidated)]
        if not support:
            return Outcome(False, "missing_evidence", "selection", tuple(top[r] for r in invalid), info)
        above = [r for r in invalid if r < support[0]]
        if above:
            return Outcome(False, "stale_ranked_above_valid", "selection", tuple(top[r] for r in above), info)
    stage = "response" if hidden else "post-selection"
    top1 = tuple(top[:1])
    if ref.abstain:
        if abstained:
            return Outcome(True, detail=info)
        stale = _stale_in(resp, ref)
        if stale:
            return Outcome(False, "stale_answer", stage, top1, {**info, "stale": stale})
        return Outcome(False, "unsupported_answer", stage, top1, info)
    if answered_right:
        return Outcome(True, detail=info)
    if abstained:
        return Outcome(False, "false_abstention", stage, (), info)
    stale = _stale_in(resp, ref)
    if stale:
        return Outcome(False, "stale_answer", stage, top1, {**info, "stale": stale})
    return Outcome(False, "wrong_answer", stage, top1, info)


_GENERATED = re.compile(r"~([a-z])\d+[0-9a-f]{4}(?![0-9a-f])")


def normalise_id(memory_id: str) -> str:
    """Strip the random part of ids generated by mutations so repeats of one failure share a key."""
    return _GENERATED.sub(r"~\1", memory_id)


def failure_key(seed_id: str, operator: str, target: str, kind: str, stage: str,
                offending: tuple[str, ...]) -> str:
    parts = [seed_id, operator, target, kind, stage, ",".join(sorted({normalise_id(i) for i in offending}))]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]
