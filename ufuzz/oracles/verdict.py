"""The one place that decides failures: campaigns, ``ufuzz replay`` and ``ufuzz corpus check`` all call these.

:func:`judge` gives an execution's verdict per level (selection when retrieval is visible, response when the
system responded); :func:`caused` says which failure of a mutant its mutation caused — one at a level where
its parent passes; :func:`failure` names it with the two keys:

* the **unique-failure key** (the paper's unit, counted by UF@B): seed, operator, obligation target, kind,
  level and the offending memory ids with the random part of mutation-generated ids stripped;
* the **cause key**: operator, kind, level, the offending memories reduced to the memories they descend from
  (:func:`root_id`; or, when none — and always for memories returned to a question nothing supports — the
  mutation's own state operation: none for a question mutant, whatever its ancestors did) and the answer-affecting fields other than the one the
  operator swapped — so repeats of one defect across update values, paraphrase wordings, replacement targets or
  the steps of a chain of updates (the first version and the second both outranking the third) are one cause
  with N occurrences.

Verdicts made with the opt-in top-evidence reader are the reader's, not the memory system's
(:func:`ufuzz.backends.responders.counts_for_system`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ufuzz.backends.responders import counts_for_system
from ufuzz.model import Execution, FuzzCase, Reference
from ufuzz.oracles.expectations import LEVELS, SELECTION, STATE, JudgeFn, Outcome, response, selection
from ufuzz.oracles.matching import Abstention

MUTANT, BASELINE = "mutant", "baseline"
#: the kinds the system probes find (:mod:`ufuzz.engine.probes`): a short result list, a stored memory its own
#: words do not find — baseline failures that no reference judged
SHORT_LIST, UNREACHABLE = "short_result_list", "memory_unreachable"
#: memories returned as relevant to a question nothing supports: which ones is the wording's doing, not the
#: defect's (a cause of this kind is its question's fact, see :func:`cause_key`)
UNSUPPORTED_RETRIEVED = "unsupported_retrieved"
PROBE_KINDS = (SHORT_LIST, UNREACHABLE)


@dataclass(frozen=True)
class Context:
    """How one campaign's executions are judged: which levels exist and with what."""

    visible: bool = True  # retrieval visible: the selection level is judged
    threshold: float | None = None  # the backend's own relevance threshold (Capabilities.relevance_threshold)
    judge: JudgeFn | None = None  # an LLM judge for responses (--llm-uses judge)
    abstention: Abstention | None = None  # what the responder says when it abstains (None: the built-in phrases)


@dataclass(frozen=True)
class Failure:
    """A failure as the failure store keeps it. ``stage`` is its level (selection | response)."""

    key: str
    case_id: str
    seed_id: str
    operator: str
    target: str
    kind: str
    stage: str
    offending: tuple[str, ...]
    detail: dict[str, Any]
    cause: str = ""
    responder: str | None = None
    origin: str = MUTANT  # mutant (caused by a mutation; UF@B) | baseline (a seed failing its own reference)

    @property
    def level(self) -> str:
        return self.stage

    @property
    def counts(self) -> bool:
        """A failure of the memory system under test (not of the opt-in reader)."""
        return counts_for_system(self.responder)


def deleted_by(case: FuzzCase) -> tuple[str, ...]:
    """The memories ``case``'s own state operations deleted."""
    return tuple(op.target for op in case.ops if op.op == "delete" and op.target)


def judge(ref: Reference, ex: Execution, deleted: tuple[str, ...], ctx: Context) -> dict[str, Outcome]:
    """The verdict of every level that applies to ``ex`` (none for an execution that errored)."""
    if ex.error is not None:
        return {}
    out: dict[str, Outcome] = {}
    if ctx.visible:
        out[SELECTION] = selection(ref, ex, deleted, ctx.threshold)
    resp = response(ref, ex, ctx.judge, getattr(ctx, "abstention", None))  # a context-like without it: built-in
    if resp is not None:
        out[resp.level] = resp
    return out


def judge_case(case: FuzzCase, ref: Reference, ex: Execution, ctx: Context) -> dict[str, Outcome]:
    return judge(ref, ex, deleted_by(case), ctx)


def caused(parent: dict[str, Outcome], mutant: dict[str, Outcome]) -> Outcome | None:
    """The mutant's failure caused by its mutation: at the first level (selection, then response) where the
    mutant fails and its parent passes the same level. A mutant failing selection where the parent passed
    is reported there only (its response follows from what was selected)."""
    for level in LEVELS:
        p, m = parent.get(level), mutant.get(level)
        if p is None or m is None or m.passed:
            continue
        if p.passed:
            return m
    return None


def first_failure(levels: dict[str, Outcome]) -> Outcome | None:
    """The first failing level of an execution judged on its own (a seed's baseline)."""
    for level in LEVELS:
        out = levels.get(level)
        if out is not None and not out.passed:
            return out
    return None


_GENERATED = re.compile(r"~([a-z])\d+[0-9a-f]{4}(?![0-9a-f])")


def normalise_id(memory_id: str) -> str:
    """Strip the random part of ids generated by mutations so repeats of one failure share a key."""
    return _GENERATED.sub(r"~\1", memory_id)


def _sha(parts: list[str]) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]


def root_id(memory_id: str) -> str:
    """The memory a mutation-generated id descends from (``p7-m22~u1a9a7~u2b3c4`` → ``p7-m22``; an add's
    ``cp~a1b2c3`` → its checkpoint ``cp``): every version along a chain of updates is the same memory to a cause."""
    return _GENERATED_ALL.sub("", memory_id)


#: the markers ufuzz's mutations append (``~u`` + depth + four hex digits; a burst's ``-N``), and nothing longer: a
#: product's own id such as ``k~e20240101`` keeps its suffix
_GENERATED_ALL = re.compile(r"~[a-z]\d{1,3}[0-9a-f]{4}(?:-\d+)?(?![0-9a-f])")


def _ids(offending: tuple[str, ...]) -> str:
    return ",".join(sorted({normalise_id(i) for i in offending}))


def _roots(offending: tuple[str, ...]) -> str:
    return ",".join(sorted({root_id(i) for i in offending}))


def failure_key(seed_id: str, operator: str, target: str, kind: str, stage: str,
                offending: tuple[str, ...]) -> str:
    return _sha([seed_id, operator, target, kind, stage, _ids(offending)])


def swapped_field(operator: str, target: str) -> str | None:
    """The query field a query operator's obligation target swaps (``entity=Bob`` → ``entity``), if any."""
    name, sep, _ = target.partition("=")
    return name if sep and name in ("entity", "attribute", "scope") else None


def cause_key(case: FuzzCase, kind: str, stage: str, offending: tuple[str, ...], state_changed: bool = True) -> str:
    """One defect, whatever value, wording or replacement target exposed it (see the module docstring).
    ``state_changed``: the mutation's own operation changed the state — only then is its last state operation what
    a failure with no offending memory is about. A question mutant of a state its ancestors changed is about its
    question: the same rewording missing the same fact's evidence is one cause whatever route of operations led
    to it (hand audit, LoCoMo: "when did Melanie go to the park?" reworded on the checkpoint and on a state where
    an ancestor had deleted another fact's evidence counted as two causes). Memories returned as relevant to a
    question nothing supports (``unsupported_retrieved``) are not part of the cause: which ones a threshold lets
    through is the wording's doing (mem0, LoCoMo dev: one question asked of two absent people drew different
    memories above its threshold and counted as two causes, where a developer sees one question that should
    have drawn nothing)."""
    operator = case.operator or ""
    target = case.obligation.target if case.obligation else ""
    what = "" if kind == UNSUPPORTED_RETRIEVED else _roots(offending)
    if kind == "stale_ranked_above_valid" and offending:
        # one out-of-date memory or two above the current one is one defect (hand audit, LongMemEval: an echo of
        # the old value rising beside the rewritten memory split one update into two causes): an update's is the
        # memory it rewrote, any other the highest-ranked out-of-date memory (offending ids come in rank order)
        last = case.ops[-1] if case.ops else None
        what = (root_id(last.target) if operator == "update" and last is not None and last.op == "update"
                and last.target else root_id(offending[0]))
    if not what and case.ops and state_changed:
        last = case.ops[-1]
        what = f"{last.op}:{root_id(last.target or (last.memory.id if last.memory else ''))}"
    swapped = swapped_field(operator, target)
    f = case.query.fields
    fields = [f"{name}={getattr(f, name)}" for name in ("entity", "attribute", "scope") if name != swapped]
    return _sha([operator, kind, stage, what, *fields])


def _cited(ex: Execution, prefix: str = "") -> dict[str, Any]:
    """The memories a backend's own answer cited: recorded to help localise a failure, never judged."""
    return {f"{prefix}cited_ids": list(ex.cited_ids)} if ex.cited_ids else {}


def failure(mutant: FuzzCase, out: Outcome, ex: Execution, parent_ex: Execution) -> Failure:
    """The failure record of ``mutant``'s caused outcome ``out``."""
    target = mutant.obligation.target if mutant.obligation else ""
    kind, stage = out.kind or "", out.level
    return Failure(
        key=failure_key(mutant.seed_id, mutant.operator or "", target, kind, stage, out.offending),
        case_id=mutant.id, seed_id=mutant.seed_id, operator=mutant.operator or "", target=target, kind=kind,
        stage=stage, offending=out.offending,
        cause=cause_key(mutant, kind, stage, out.offending, state_changed=ex.state_key != parent_ex.state_key),
        responder=ex.responder if stage != SELECTION else None,
        detail={**out.detail, "query": ex.query, "parent_query": parent_ex.query, "mutation": mutant.detail,
                "parent_response": parent_ex.response, "parent_top_ids": list(parent_ex.top_ids),
                "top_scores": list(ex.top_scores), **_cited(ex), **_cited(parent_ex, "parent_")})


def state_failure(mutant: FuzzCase, parent: FuzzCase, finding: Any, parent_ex: Execution | None = None) -> Failure:
    """A failure of the ``state`` level (an :class:`~ufuzz.operators.sideeffects.Finding`): a state operation that
    changed the state beyond what it asked for, seen by the operator's verification through get/list before any
    retrieval, or a write its own words do not find, seen by reading it back (``write_not_found``,
    :mod:`ufuzz.engine.readback`). Caused by the mutation and keyed like any other; its cause ignores the question
    (one side effect of one operation on the memories it hit, whichever seed reached it; for an unread write, the
    memory written, whatever value it was given)."""
    target = mutant.obligation.target if mutant.obligation else ""
    kind, offending = finding.kind, tuple(finding.memories)
    # a write its own words do not find is one defect of the memory written, whatever new value it was given
    cause = (_sha([mutant.operator or "", kind, STATE, _roots(offending)]) if kind == "write_not_found"
             else _sha([mutant.operator or "", kind, STATE, target, _ids(offending)]))
    return Failure(
        key=failure_key(mutant.seed_id, mutant.operator or "", target, kind, STATE, offending),
        case_id=mutant.id, seed_id=mutant.seed_id, operator=mutant.operator or "", target=target, kind=kind,
        stage=STATE, offending=offending, cause=cause,
        detail={"reason": finding.reason, "changes": [dict(c) for c in finding.changes],
                "operations": [o.to_dict() for o in mutant.ops[len(parent.ops):]], "query": mutant.query.text,
                "mutation": mutant.detail,
                "parent_top_ids": list(parent_ex.top_ids) if parent_ex is not None else []})


def baseline_failure(seed: FuzzCase, out: Outcome, ex: Execution, reason: str) -> Failure:
    """A seed (or a question re-asked on a seed's unmutated state) failing its own reference: a finding about
    the memory system, counted apart from UF@B."""
    kind, stage = out.kind or "", out.level
    f = seed.query.fields
    asked = [] if seed.parent_id is None else [f.entity, f.attribute, f.scope]  # a re-asked question's own
    return Failure(
        key=_sha(["baseline", seed.seed_id, kind, stage, _ids(out.offending), *asked]), case_id=seed.id,
        seed_id=seed.seed_id, operator="", target="", kind=kind, stage=stage, offending=out.offending,
        cause=_sha(["baseline", kind, stage, "" if kind == UNSUPPORTED_RETRIEVED else _ids(out.offending),
                    seed.query.fields.entity,
                    seed.query.fields.attribute, seed.query.fields.scope]),
        responder=ex.responder if stage != SELECTION else None, origin=BASELINE,
        detail={**out.detail, "query": ex.query, "reason": reason, "top_scores": list(ex.top_scores), **_cited(ex)})


def probe_failures(seed: FuzzCase, ex: Execution) -> list[Failure]:
    """The failures the system probes saw on a seed's execution (``ex.probes``, :mod:`ufuzz.engine.probes`):
    findings about the memory system that no mutation caused and no reference judged — recorded as baseline
    failures, counted apart from UF@B. A short result list is keyed per seed (its question) and is one cause
    whatever the question; an unreachable memory is keyed per memory of the checkpoint (whichever seed's execution
    probed it) and is one cause per edge (the oldest, the newest memory), whatever the checkpoint."""
    got = ex.probes or {}
    out: list[Failure] = []
    short = got.get("short")
    if short:
        kind = SHORT_LIST
        out.append(Failure(
            key=_sha(["probe", seed.seed_id, kind, SELECTION]), case_id=seed.id, seed_id=seed.seed_id, operator="",
            target="", kind=kind, stage=SELECTION, offending=(), cause=_sha(["probe", kind, SELECTION]),
            origin=BASELINE, detail={**short, "query": ex.query, "top_scores": list(ex.top_scores)}))
    for found in got.get("unreachable") or ():
        kind, mid = UNREACHABLE, str(found["memory"])
        out.append(Failure(
            key=_sha(["probe", seed.checkpoint_id, kind, STATE, mid]), case_id=seed.id, seed_id=seed.seed_id,
            operator="", target="", kind=kind, stage=STATE, offending=(mid,),
            cause=_sha(["probe", kind, STATE, str(found.get("edge", ""))]), origin=BASELINE,
            detail={"reason": found["reason"], "changes": [dict(found["change"])], "edge": found.get("edge", ""),
                    "checkpoint": seed.checkpoint_id, "query": ex.query}))
    return out


@dataclass
class Tally:
    """Counts a campaign reports: mutant failures of the system (UF@B), their causes, baseline failures,
    and what the opt-in reader failed (never the system's)."""

    unique: set[str] = field(default_factory=set)
    causes: set[str] = field(default_factory=set)
    baseline: set[str] = field(default_factory=set)
    reader: set[str] = field(default_factory=set)

    def add(self, f: Failure) -> bool:
        """Count ``f``; True when its key is new among the system's mutant failures."""
        if not f.counts:
            self.reader.add(f.key)
            return False
        if f.origin == BASELINE:
            self.baseline.add(f.key)
            return False
        new = f.key not in self.unique
        self.unique.add(f.key)
        if new:  # a key's cause is its first occurrence's, as the failure store keeps it (status and triage
            self.causes.add(f.cause)  # count causes from there: the summary must agree with them)
        return new
