"""Behaviour classes: failures counted the way a developer fixes them.

A unique failure (the paper's UF@B unit) is one seed × operator × target × kind × level × offending memories; a
*cause* (:func:`ufuzz.oracles.verdict.cause_key`) merges the repeats of one defect on one fact across values,
wordings and replacement targets. A **behaviour class** goes one step further: it names the behaviour of the
memory system that the failures show — "a superseded memory outranks its replacement", "evidence leaves the
top-k under rewording", "a deleted memory is still retrieved" — whatever fact, person or checkpoint they were
seen on. On the shipped suite the embedded backend's append policy gives dozens of update causes (one per fact)
and one class: the unit a developer fixes is the class.

A class is a pure function of a failure's operator, level and kind (:func:`class_of`), so it needs nothing
stored and old corpora get classes too. Every cause belongs to exactly one class (a cause key includes the
operator, kind and level). A nightly baseline (``ufuzz run --baseline``) matches findings by
:func:`behaviour_of` — the class, split once by whether the memory at fault is one the state no longer holds —
instead of by unique-failure key or cause, whose ids and facts change with the seed and budget. The ids are
part of that contract: an id keeps its meaning; a new behaviour gets a new id.

One behaviour seen through two operators is one class: a deleted memory that search still returns is the same
defect whether the queried fact's evidence or an unrelated memory was deleted. Operators this table does not
know (plugins) and levels it does not know get a class of their own per (operator, level, kind), titled from
the kind, so nothing is ever left without one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ufuzz.model import StateOp
from ufuzz.model.execution import OVERWRITTEN
from ufuzz.oracles.expectations import current_kind
from ufuzz.oracles.verdict import SHORT_LIST, UNREACHABLE

__all__ = ["BehaviourClass", "Behaviour", "class_of", "behaviour_of", "removed_by", "summarise"]


@dataclass(frozen=True)
class BehaviourClass:
    """A behaviour of the memory system under test: a stable ``id`` and a one-line ``title``."""

    id: str
    title: str


def _c(cid: str, title: str) -> BehaviourClass:
    return BehaviourClass(cid, title)


DELETED_RETRIEVED = _c("deleted-still-retrieved", "a deleted memory is still retrieved")

#: (operator, level, kind) -> class. Selection-level kinds first, then response-level ones.
_TABLE: dict[tuple[str, str, str], BehaviourClass] = {
    # memory-state operators
    ("update", "selection", "stale_ranked_above_valid"):
        _c("superseded-outranks-replacement", "a superseded memory outranks its replacement"),
    ("update", "selection", "missing_evidence"):
        _c("replacement-not-retrieved", "after an update the new value is not retrieved"),
    ("update", "selection", "deleted_evidence_retrieved"): DELETED_RETRIEVED,
    ("delete", "selection", "deleted_evidence_retrieved"): DELETED_RETRIEVED,
    ("delete", "selection", "missing_evidence"):
        _c("remaining-evidence-lost-after-delete", "after a delete the evidence that remains is not retrieved"),
    ("delete", "selection", "stale_ranked_above_valid"):
        _c("invalid-outranks-remaining-after-delete",
           "after a delete an invalidated memory outranks the evidence that remains"),
    ("delete", "selection", "unsupported_retrieved"):
        _c("retrieved-after-evidence-deleted",
           "after its evidence is deleted, other memories are still returned as relevant"),
    ("unrelated_edit", "selection", "deleted_evidence_retrieved"): DELETED_RETRIEVED,
    ("unrelated_edit", "selection", "missing_evidence"):
        _c("unrelated-edit-displaces-evidence", "an unrelated edit pushes the evidence out of the top-k"),
    ("unrelated_edit", "selection", "stale_ranked_above_valid"):
        _c("unrelated-edit-promotes-invalid", "after an unrelated edit an invalidated memory outranks the evidence"),
    ("unrelated_edit", "selection", "unsupported_retrieved"):
        _c("unrelated-edit-makes-irrelevant-relevant",
           "after an unrelated edit, memories are returned as relevant to a question they cannot support"),
    # query operators
    ("paraphrase", "selection", "missing_evidence"):
        _c("evidence-lost-under-rewording", "evidence leaves the top-k under rewording"),
    ("paraphrase", "selection", "stale_ranked_above_valid"):
        _c("invalid-outranks-evidence-under-rewording", "under rewording an invalidated memory outranks the evidence"),
    ("paraphrase", "selection", "unsupported_retrieved"):
        _c("rewording-makes-irrelevant-relevant",
           "a rewording of an unanswerable question gets memories returned as relevant"),
    ("target_change", "selection", "missing_evidence"):
        _c("new-target-evidence-not-retrieved",
           "asked about another target (person, attribute, or time: now or before), its evidence is not retrieved"),
    ("target_change", "selection", "stale_ranked_above_valid"):
        _c("old-target-outranks-new-target",
           "asked about another target (person, attribute, or time: now or before), the first target's memory "
           "outranks the new target's evidence"),
    ("target_change", "selection", "unsupported_retrieved"):
        _c("unsupported-question-gets-memories", "a question memory cannot support gets memories returned as relevant"),
    ("unsupported", "selection", "unsupported_retrieved"):
        _c("unsupported-question-gets-memories", "a question memory cannot support gets memories returned as relevant"),
    ("speaker_swap", "selection", "unsupported_retrieved"):
        _c("other-persons-memory-returned", "a question about one person gets another person's memory as relevant"),
    # response level: what the system's own answer did
    ("update", "response", "stale_answer"):
        _c("answers-superseded-value", "the answer gives the value an update replaced"),
    ("delete", "response", "stale_answer"):
        _c("answers-deleted-value", "the answer gives a value whose memory was deleted"),
    ("paraphrase", "response", "wrong_answer"):
        _c("wrong-answer-under-rewording", "a reworded question gets a wrong answer"),
    ("paraphrase", "response", "false_abstention"):
        _c("abstains-under-rewording", "a reworded question is answered with an abstention though memory supports it"),
}

#: classes by kind alone, for operators not in the table (titles say which operator)
_BY_KIND = {
    "deleted_evidence_retrieved": lambda op: DELETED_RETRIEVED,
    "unsupported_retrieved": lambda op: _TABLE[("unsupported", "selection", "unsupported_retrieved")],
    "unsupported_answer": lambda op: _c("answers-unsupported-question",
                                        "a question memory cannot support gets a factual answer"),
    "false_abstention": lambda op: _c(f"abstains-though-supported:{op}",
                                      f"after {op} the system abstains though memory supports the answer"),
    "missing_evidence": lambda op: _c(f"evidence-not-retrieved:{op}", f"after {op} the evidence is not retrieved"),
    "stale_ranked_above_valid": lambda op: _c(f"invalid-outranks-evidence:{op}",
                                              f"after {op} an invalidated memory outranks the evidence"),
    "stale_answer": lambda op: _c(f"answers-out-of-date-value:{op}", f"after {op} the answer gives an out-of-date value"),
    "wrong_answer": lambda op: _c(f"wrong-answer:{op}", f"after {op} the answer is wrong"),
}


#: a written memory its own words do not find (:mod:`ufuzz.engine.readback`): one behaviour of the system's index,
#: whichever operation wrote the memory
WRITE_NOT_FOUND = _c("write-not-found-by-its-words", "a memory just written is not found by a search for its own words")


#: what the system probes find on the seeds' own states (:mod:`ufuzz.engine.probes`), with no operator
_PROBED: dict[tuple[str, str], BehaviourClass] = {
    ("selection", SHORT_LIST):
        _c("short-result-list", "asked for k results, the search returns fewer while more memories match"),
    ("state", UNREACHABLE):
        _c("stored-memory-unreachable", "a stored memory is not found by a search for its own words"),
}


def class_of(operator: str | None, level: str, kind: str) -> BehaviourClass:
    """The behaviour class of a failure of ``operator`` (empty: a seed failing as asked) at ``level``/``kind``."""
    op = operator or ""
    if not op:
        return _PROBED.get((level, kind)) or _c(f"fails-as-asked:{level}:{kind}",
                                                f"a seed question fails as asked ({level}: {kind})")
    known = _TABLE.get((op, level, kind))
    if known is not None:
        return known
    if (level, kind) == ("state", "write_not_found"):
        return WRITE_NOT_FOUND
    if level in ("selection", "response") and kind in _BY_KIND:
        return _BY_KIND[kind](op)
    return _c(f"{op}:{level}:{kind}", f"after {op}, {level} fails: {kind.replace('_', ' ')}")


@dataclass(frozen=True)
class Behaviour:
    """What a nightly baseline matches on (``ufuzz run --baseline``): a behaviour class, split once by whether
    the memories at fault are ones the state no longer holds.

    ``id`` is the class id, or the class id with :data:`REMOVED_SUFFIX` when some offending memory is one the
    case's own recipe deleted or a version an in-place update overwrote (``m3@overwritten``) while the class
    does not already say so. A correct memory system never returns a memory it no longer holds, whereas any
    system with imperfect ranking ranks *existing* memories wrongly now and then: the two are different
    defects even when the symptom (say, the new value not retrieved after an update) is the same. Nothing else
    about the offending memories (which fact, which person, which ids, which wording) is part of a behaviour,
    so one defect seen on other facts, wordings or seeds is the same behaviour."""

    id: str
    title: str
    cls: BehaviourClass
    removed: bool = False  # the offending memories include one the state no longer holds


#: what a behaviour id gets when its offending memories include one the state no longer holds
REMOVED_SUFFIX = "+removed-memory"
#: the classes whose title already says that the memory at fault was removed
_REMOVED_CLASSES = frozenset({DELETED_RETRIEVED.id})


def removed_by(ops: Iterable[StateOp]) -> frozenset[str]:
    """The memory ids a state recipe leaves deleted (deleted and not written again afterwards)."""
    gone: set[str] = set()
    for op in ops:
        if op.op == "delete" and op.target:
            gone.add(op.target)
        elif op.memory is not None:
            gone.discard(op.memory.id)
    return frozenset(gone)


def behaviour_of(operator: str | None, level: str, kind: str, offending: Iterable[str] = (),
                 ops: Iterable[StateOp] = ()) -> Behaviour:
    """The behaviour of a failure: its class (:func:`class_of`) and whether an offending memory is one the
    mutant's state recipe ``ops`` deleted or an overwritten version (see :class:`Behaviour`). A kind recorded
    under an older name is read as what it is now (:func:`~ufuzz.oracles.expectations.current_kind`), so a
    baseline written before keeps matching the same behaviour."""
    offending = tuple(offending)
    c = class_of(operator, level, current_kind(level, kind, offending))
    gone = removed_by(ops)
    removed = any(str(i).endswith(OVERWRITTEN) or str(i) in gone for i in offending)
    if not removed or c.id in _REMOVED_CLASSES:
        return Behaviour(c.id, c.title, c, removed)
    return Behaviour(c.id + REMOVED_SUFFIX, f"{c.title}, and a memory the system no longer holds (deleted or "
                     "overwritten) is returned", c, True)


def summarise(groups: list[dict]) -> list[dict]:
    """Classes of failure groups (dicts with ``operator``, ``stage`` or ``level``, ``kind``, ``unique``,
    ``causes``, ``occurrences``): one row per class with the sums, the (operator, level, kind) it covers, most
    causes first. Causes add up: no cause belongs to two groups."""
    out: dict[str, dict] = {}
    for g in groups:
        level = g.get("stage") or g.get("level") or ""
        c = class_of(g.get("operator"), level, g["kind"])
        row = out.setdefault(c.id, {"class": c.id, "title": c.title, "unique": 0, "causes": 0, "occurrences": 0,
                                    "covers": []})
        row["unique"] += int(g.get("unique", 0))
        row["causes"] += int(g.get("causes", 0))
        row["occurrences"] += int(g.get("occurrences", 0))
        row["covers"].append(f"{g.get('operator') or '-'}:{level}:{g['kind']}")
    return sorted(out.values(), key=lambda r: (-r["causes"], -r["unique"], r["class"]))
