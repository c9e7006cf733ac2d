"""The four LLM uses: paraphrase realization, answering, judging, field extraction.

Each is a small class around an :class:`~ufuzz.llm.client.LLMClient`. They only produce *candidates*: the
caller validates every output with the same rules as the template path (a paraphrase must keep the query's
fields, an extracted field set is checked against provenance, …).

The user messages use labeled sections (``Query:``, ``Memories:`` …) so that any chat model can follow
them and a rule-based local stand-in (``tests/support/llm_server.py``) can parse them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ufuzz.llm.client import LLMClient, LLMError
from ufuzz.model.reference import RUBRIC_KEYS

#: Paraphrase transformations the realizer knows.
TRANSFORMATIONS = ("reword", "shorten", "add_context", "change_form")

#: Judge labels.
LABELS = ("Correct", "Hallucination", "Omission")

#: The exact abstention the answerer is told to give.
IDK = "I don't know"

_TRANSFORMATION_HELP = {
    "reword": "Reword the query with different words and phrasing; keep its syntactic form.",
    "shorten": "Make the query shorter: drop filler and removable context, keep what it asks.",
    "add_context": "Add a short, non-restrictive piece of conversational context (e.g. why the user asks) "
                   "that does not narrow or change what is asked.",
    "change_form": "Change the syntactic form (e.g. a question into an imperative request, or the reverse).",
}


def _text_of(query: Any) -> str:
    return str(getattr(query, "text", query))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class ParaphraseRealizer:
    SYSTEM = (
        "You rewrite queries to a personal memory assistant. Apply the requested transformation only. "
        "Keep every entity, attribute and time scope of the query exactly; do not add, drop or change any "
        "condition, name, date or qualifier; do not answer the query. "
        "Return only the rewritten query on one line, with no quotes, labels or explanation."
    )

    def __init__(self, client: LLMClient, system: str | None = None) -> None:
        self.client = client
        self.system = system or self.SYSTEM  # a user's own prompt (--prompts DIR) replaces the default

    def messages(self, query_text: str, transformation: str) -> list[dict[str, str]]:
        if transformation not in TRANSFORMATIONS:
            raise ValueError(f"unknown paraphrase transformation {transformation!r}; expected one of "
                             f"{TRANSFORMATIONS}")
        user = (f"Transformation: {transformation}\n"
                f"Instruction: {_TRANSFORMATION_HELP[transformation]}\n"
                f"Query: {_one_line(query_text)}")
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def realize(self, query_text: str, transformation: str) -> str:
        """A candidate rewrite of ``query_text`` (to be validated by the caller)."""
        out = self.client.complete(self.messages(query_text, transformation))
        cleaned = clean_rewrite(out)
        if not cleaned:
            raise LLMError(f"paraphrase reply is empty after cleaning: {out[:200]!r}")
        return cleaned


_LABEL_PREFIX = re.compile(r"^(?:rewritten query|rewritten|query|paraphrase|output|answer)\s*:\s*", re.I)
_QUOTES = "\"'“”‘’`"


def clean_rewrite(text: str) -> str:
    """First non-empty line of a model reply, without a leading label or wrapping quotes."""
    for line in str(text).splitlines():
        line = line.strip()
        if line and not line.startswith("```"):
            break
    else:
        return ""
    for _ in range(2):  # a label inside quotes or quotes after a label
        line = _LABEL_PREFIX.sub("", line).strip()
        if len(line) >= 2 and line[0] in _QUOTES and line[-1] in _QUOTES:
            line = line[1:-1].strip()
    return line


class Answerer:
    SYSTEM = (
        "You are a personal assistant answering from the user's stored memories. "
        "Answer the query using only the memories given; do not use outside knowledge or guess. "
        f'If the memories do not contain the answer, reply exactly "{IDK}". '
        "Answer briefly."
    )

    def __init__(self, client: LLMClient, system: str | None = None) -> None:
        self.client = client
        self.system = system or self.SYSTEM  # a user's own prompt (--prompts DIR) replaces the default

    def messages(self, query: Any, memories: Iterable[str]) -> list[dict[str, str]]:
        mems = [_one_line(m) for m in memories]
        listing = "\n".join(f"[{i}] {m}" for i, m in enumerate(mems, 1)) if mems else "(none)"
        user = f"Memories:\n{listing}\n\nQuery: {_one_line(_text_of(query))}"
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def answer(self, query: Any, memories: list[str]) -> str:
        """The model's answer to ``query`` (a string or anything with ``.text``) from ``memories``."""
        return self.client.complete(self.messages(query, memories)).strip()


@dataclass(frozen=True)
class Judgement:
    label: str  # one of LABELS
    reason: str
    llm_label: str | None = None  # the model's own label before rubric overrides
    overridden: bool = False


def _norm(s: str) -> str:
    return " ".join(str(s).casefold().split())


def apply_rubric(label: str, reason: str, response: str, rubric: dict[str, Any] | None) -> Judgement:
    """Deterministic rubric overrides of a verdict: a ``must_not_include`` hit forces Hallucination; a
    missing ``must_include`` forces Omission unless the verdict is Hallucination. Matching is
    case-insensitive substring matching on whitespace-normalized text."""
    if not rubric:
        return Judgement(label, reason, llm_label=label)
    resp = _norm(response)
    banned = [s for s in rubric.get("must_not_include") or [] if _norm(s) and _norm(s) in resp]
    if banned:
        return Judgement("Hallucination", f"rubric: response contains forbidden {banned!r}; model said "
                         f"{label}: {reason}", llm_label=label, overridden=label != "Hallucination")
    missing = [s for s in rubric.get("must_include") or [] if _norm(s) not in resp]
    if missing and label != "Hallucination":
        return Judgement("Omission", f"rubric: response lacks required {missing!r}; model said {label}: "
                         f"{reason}", llm_label=label, overridden=label != "Omission")
    return Judgement(label, reason, llm_label=label)


class Judge:
    SYSTEM = (
        "You grade a memory assistant's response to a question against a reference. "
        "Labels: Correct = the response gives the reference answer (or, when the reference says the "
        "assistant should abstain, the response abstains); Hallucination = the response asserts an "
        "answer that is wrong, outdated or unsupported (including answering when it should abstain); "
        "Omission = the response fails to give the reference answer without asserting a wrong one "
        "(e.g. it abstains or is incomplete). Apply the rubric if given: every must_include item must "
        "appear, no must_not_include item may appear. Reply with JSON only."
    )

    SCHEMA: dict[str, Any] = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": list(LABELS)},
            "reason": {"type": "string"},
        },
        "required": ["label", "reason"],
        "additionalProperties": False,
    }

    def __init__(self, client: LLMClient, system: str | None = None) -> None:
        self.client = client
        self.system = system or self.SYSTEM  # a user's own prompt (--prompts DIR) replaces the default

    def messages(self, question: str, reference_answer: str | None, response: str,
                 rubric: dict[str, Any] | None = None) -> list[dict[str, str]]:
        ref = ("(none: the assistant should abstain, e.g. say it doesn't know)" if reference_answer is None
               else _one_line(reference_answer))
        lines = [f"Question: {_one_line(question)}", f"Reference answer: {ref}",
                 f"Response: {_one_line(response)}"]
        if rubric and (rubric.get("must_include") or rubric.get("must_not_include")):
            inc = "; ".join(_one_line(s) for s in rubric.get("must_include") or []) or "(none)"
            exc = "; ".join(_one_line(s) for s in rubric.get("must_not_include") or []) or "(none)"
            lines += [f"Rubric must_include: {inc}", f"Rubric must_not_include: {exc}"]
        if rubric and rubric.get("criteria"):  # the benchmark's own criterion for this type of question
            lines += [f"Benchmark: {_one_line(rubric.get('benchmark') or '(unnamed)')}",
                      f"Question type: {_one_line(rubric.get('question_type') or '(unnamed)')}",
                      f"Benchmark criteria (decide Correct by these): {_one_line(rubric['criteria'])}"]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": "\n".join(lines)}]

    def judge(self, question: str, reference_answer: str | None, response: str,
              rubric: dict[str, Any] | None = None) -> Judgement:
        """Label ``response``; ``reference_answer=None`` means the assistant should abstain."""
        if rubric is not None:
            unknown = set(rubric) - set(RUBRIC_KEYS)
            if unknown:
                raise ValueError(f"rubric has unknown keys {sorted(unknown)}; "
                                 f"expected {' / '.join(RUBRIC_KEYS)}")
        out = self.client.complete_json(self.messages(question, reference_answer, response, rubric),
                                        self.SCHEMA, schema_name="judgement")
        return apply_rubric(out["label"], str(out["reason"]), response, rubric)

    def label(self, question: str, reference_answer: str | None, response: str,
              rubric: dict[str, Any] | None = None) -> str:
        """Just the label of :meth:`judge`: the form of judge :func:`ufuzz.oracles.expectations.evaluate`
        calls, which passes a reference's rubric along."""
        return self.judge(question, reference_answer, response, rubric).label


class FieldExtractor:
    SYSTEM = (
        "You extract the answer-affecting fields of a question to a personal memory assistant: the entity "
        "it is about, the attribute asked for, the time scope (current = the value valid now, previous = "
        "the value before the latest change, any = not time-scoped), and whether the context snippets "
        "contain an answer (answerable). Use short lowercase attribute names such as city, employer, "
        "pet_name. If the entity or the attribute cannot be established from the question and the "
        "snippets, set established to false; never guess. Reply with JSON only."
    )

    SCHEMA: dict[str, Any] = {
        "type": "object",
        "properties": {
            "established": {"type": "boolean"},
            "entity": {"type": "string"},
            "attribute": {"type": "string"},
            "scope": {"type": "string", "enum": ["current", "previous", "any"]},
            "answerable": {"type": "boolean"},
        },
        "required": ["established", "entity", "attribute", "scope", "answerable"],
        "additionalProperties": False,
    }

    def __init__(self, client: LLMClient, system: str | None = None) -> None:
        self.client = client
        self.system = system or self.SYSTEM  # a user's own prompt (--prompts DIR) replaces the default

    def messages(self, question: str, context_snippets: Iterable[str]) -> list[dict[str, str]]:
        snips = [_one_line(s) for s in context_snippets]
        listing = "\n".join(f"[{i}] {s}" for i, s in enumerate(snips, 1)) if snips else "(none)"
        user = f"Question: {_one_line(question)}\n\nContext snippets:\n{listing}"
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def extract(self, question: str, context_snippets: list[str]) -> dict[str, Any] | None:
        """``{"entity", "attribute", "scope", "answerable"}`` (keys as in ``QueryFields.from_dict``), or
        ``None`` when the model says the fields cannot be established (or leaves entity/attribute empty)."""
        out = self.client.complete_json(self.messages(question, context_snippets), self.SCHEMA,
                                        schema_name="query_fields")
        if not out["established"]:
            return None
        entity, attribute = str(out["entity"]).strip(), str(out["attribute"]).strip()
        if not entity or not attribute:
            return None
        return {"entity": entity, "attribute": attribute, "scope": out["scope"],
                "answerable": bool(out["answerable"])}
