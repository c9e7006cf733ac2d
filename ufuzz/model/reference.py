"""The reference: expected behaviour for one query on one memory state, kept apart from the seed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

#: The keys of a judge rubric (the MemOps ``judge_rubric`` and :meth:`ufuzz.llm.uses.Judge.judge`'s): the
#: string checks, then the benchmark's judging criteria for the question's type (LongMemEval, LoCoMo).
RUBRIC_KEYS = ("must_include", "must_not_include", "benchmark", "question_type", "criteria", "criteria_version")
#: the optional text keys of a rubric (the benchmark's criteria)
_CRITERIA_KEYS = ("benchmark", "question_type", "criteria", "criteria_version")
#: How a reference's answer relates to its evidence (None: not known).
ANSWER_FORMS = (None, "extractive", "abstractive")


@dataclass(frozen=True)
class Rubric:
    """A benchmark's judging rubric for one question: strings a correct response contains and strings it
    must not contain (e.g. a superseded or retracted value), and/or the benchmark's own judging criteria for
    the question's type (``criteria``: what counts as a right response, written by this project from the
    benchmark's published evaluation, ``criteria_version`` naming that text). Only an LLM judge applies it;
    an empty rubric checks nothing and is false."""

    must_include: tuple[str, ...] = ()
    must_not_include: tuple[str, ...] = ()
    benchmark: str | None = None  # e.g. "longmemeval", "locomo"
    question_type: str | None = None  # the benchmark's type of the question (e.g. "temporal-reasoning")
    criteria: str | None = None
    criteria_version: str | None = None

    def __bool__(self) -> bool:
        return bool(self.must_include or self.must_not_include or self.criteria)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"must_include": list(self.must_include),
                             "must_not_include": list(self.must_not_include)}
        for key in _CRITERIA_KEYS:  # optional: a rubric without criteria serializes as before
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Rubric:
        """Raises ``ValueError`` naming the key for anything but an object of string lists under
        :data:`RUBRIC_KEYS`."""
        if not isinstance(d, dict):
            raise ValueError(f"a rubric must be an object with {' / '.join(RUBRIC_KEYS)}, got {type(d).__name__}")
        unknown = sorted(set(d) - set(RUBRIC_KEYS))
        if unknown:
            raise ValueError(f"unknown rubric key(s) {unknown}; expected {' / '.join(RUBRIC_KEYS)}")
        for key in ("must_include", "must_not_include"):
            items = d.get(key, [])
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise ValueError(f"rubric {key} must be a list of strings")
        for key in _CRITERIA_KEYS:
            if d.get(key) is not None and not isinstance(d[key], str):
                raise ValueError(f"rubric {key} must be a string")
        return cls(must_include=tuple(d.get("must_include", ())),
                   must_not_include=tuple(d.get("must_not_include", ())),
                   **{k: d.get(k) for k in _CRITERIA_KEYS})


@dataclass(frozen=True)
class Reference:
    """Expected behaviour for one query on one memory state: an answer or an abstention.

    ``answer`` is None exactly when ``abstain`` is True. ``supporting`` are the memory ids whose use is
    required; ``invalidated`` are ids (stale, superseded, deleted) whose use is a failure.
    ``aliases`` are accepted alternative surface forms of the answer; ``stale_answers`` are values that are
    wrong *because* they are out of date or deleted (their appearance in a response is a stale answer).
    ``rubric`` is the benchmark's own judging rubric, when it has one (MemOps); only an LLM judge uses it,
    the offline matching ignores it. ``answer_form`` says how the benchmark's answer relates to its
    evidence, where an importer knows: ``extractive`` (written verbatim in a supporting memory, so text
    matching can judge it) or ``abstractive`` (a summary or inference: only a judge can); None otherwise.
    """

    query_id: str
    answer: str | None
    abstain: bool = False
    supporting: tuple[str, ...] = ()
    invalidated: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    stale_answers: tuple[str, ...] = ()
    rubric: Rubric | None = None
    answer_form: str | None = None  # "extractive" | "abstractive" | None (unknown)

    def __post_init__(self) -> None:
        if self.abstain and self.answer is not None:
            raise ValueError("a reference either abstains or has an answer, not both")
        if not self.abstain and not self.answer:
            raise ValueError("a non-abstaining reference needs an answer")
        if self.answer_form not in ANSWER_FORMS:
            raise ValueError(f"answer_form must be one of {ANSWER_FORMS}, got {self.answer_form!r}")

    def to_dict(self) -> dict[str, Any]:
        d = {"query_id": self.query_id, "answer": self.answer, "abstain": self.abstain,
             "supporting": list(self.supporting), "invalidated": list(self.invalidated),
             "aliases": list(self.aliases), "stale_answers": list(self.stale_answers)}
        if self.rubric is not None:  # optional: references without one serialize as before
            d["rubric"] = self.rubric.to_dict()
        if self.answer_form is not None:  # optional likewise
            d["answer_form"] = self.answer_form
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reference:
        rubric = d.get("rubric")
        return cls(query_id=str(d["query_id"]), answer=d.get("answer"), abstain=bool(d.get("abstain", False)),
                   supporting=tuple(str(x) for x in d.get("supporting", ())),
                   invalidated=tuple(str(x) for x in d.get("invalidated", ())),
                   aliases=tuple(str(x) for x in d.get("aliases", ())),
                   stale_answers=tuple(str(x) for x in d.get("stale_answers", ())),
                   rubric=None if rubric is None else Rubric.from_dict(rubric),
                   answer_form=d.get("answer_form"))

    def with_(self, **kw: Any) -> Reference:
        return replace(self, **kw)
