"""A deterministic stand-in for an LLM judge that applies a benchmark's criteria (LongMemEval, LoCoMo "J").

The local OpenAI-compatible server (``tests/support/llm_server.py``) answers a judge request that carries
``Benchmark:`` / ``Question type:`` / ``Benchmark criteria`` lines with :func:`judge_by_benchmark`: the rules
below are a mechanical reading of the criteria texts in :mod:`ufuzz.seeds.criteria`, so a test can check that
the criterion, the reference and the response reach the judge and that its verdict comes back — the verdict
table in ``tests/oracles/benchmark_cases.py`` is what a careful reader of the published criteria decides.
"""

from __future__ import annotations

import re
from typing import Any

_ABSTAIN = re.compile(
    r"\b(don'?t know|do not know|not sure|no information|not mentioned|never mentioned|wasn'?t mentioned|"
    r"was not mentioned|didn'?t mention|did not mention|never said|cannot be answered|can'?t be answered|"
    r"cannot answer|can'?t answer|unable to answer|no record|not stated|never stated|doesn'?t say|"
    r"does not say|no mention)\b", re.I)

_NUMBERS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_STOP = {"the", "a", "an", "is", "was", "were", "are", "to", "of", "in", "on", "at", "and", "or", "for", "with",
         "her", "his", "their", "she", "he", "they", "it", "that", "this", "by", "as", "from", "be", "has", "had",
         "have", "did", "does", "do", "i", "you", "your", "my", "me", "we", "our", "s", "about", "some"}
_UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
          "year": "year", "years": "year"}
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_MON = "(?:" + "|".join(list(_MONTHS) + [m[:3] for m in _MONTHS]) + r")\b\.?"


def _norm(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", str(text).casefold().replace("'", ""))
    return " ".join(_NUMBERS.get(w, w) for w in words)


def _contains(response: str, value: str) -> bool:
    v = _norm(value)
    return bool(v) and f" {v} " in f" {_norm(response)} "


def _parts(answer: str) -> list[str]:
    """The items of a list answer ("A, B and C"), or the answer itself."""
    items = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", answer) if p.strip()]
    return items if len(items) > 1 else [answer]


def _counts(text: str) -> list[tuple[int, str]]:
    words = _norm(text).split()
    return [(int(a), _UNITS[b]) for a, b in zip(words, words[1:]) if a.isdigit() and b in _UNITS]


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _content(text: str) -> set[str]:
    return {_stem(w) for w in _norm(text).split() if w not in _STOP}


def _month(name: str) -> int:
    name = name.casefold().rstrip(".")
    return next(i for m, i in _MONTHS.items() if name in (m, m[:3]))


def dates(text: str) -> list[tuple[int, int | None, int | None]]:
    """(year, month or None, day or None) of each date or period written in ``text``."""
    t = str(text)
    out: list[tuple[int, int | None, int | None]] = []
    spans: list[tuple[int, int]] = []

    def take(m: re.Match[str], y: str, mo: int | None, d: str | None) -> None:
        out.append((int(y), mo, int(d) if d else None))
        spans.append(m.span())

    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", t):
        take(m, m.group(1), int(m.group(2)), m.group(3))
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON}),?\s+(\d{{4}})\b", t, re.I):
        take(m, m.group(3), _month(m.group(2)), m.group(1))
    for m in re.finditer(rf"\b({_MON})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", t, re.I):
        take(m, m.group(3), _month(m.group(1)), m.group(2))

    def free(m: re.Match[str]) -> bool:
        return not any(a <= m.start() < b for a, b in spans)

    for m in re.finditer(rf"\b({_MON}),?\s+(\d{{4}})\b", t, re.I):
        if free(m):
            take(m, m.group(2), _month(m.group(1)), None)
    for m in re.finditer(r"\b(19\d{2}|20\d{2})\b", t):
        if free(m):
            take(m, m.group(1), None, None)
    return out


def _same_time(reference: str, response: str) -> bool | None:
    """Whether the response names a date that agrees with the reference's: the same year, and the same month
    and day where both name one (None: the reference names no date)."""
    ref = dates(reference)
    if not ref:
        return None

    def agree(a: int | None, b: int | None) -> bool:
        return a is None or b is None or a == b

    return any(y == ry and agree(mo, rmo) and agree(d, rd) for y, mo, d in dates(response) for ry, rmo, rd in ref)


def _verdict(right: bool, partial: bool, response: str) -> dict[str, str]:
    if right:
        return {"label": "Correct", "reason": "meets the benchmark's criterion"}
    if partial or _ABSTAIN.search(response):
        return {"label": "Omission", "reason": "incomplete or declines to answer"}
    return {"label": "Hallucination", "reason": "gives another answer"}


def judge_by_benchmark(benchmark: str, question_type: str, reference: str, response: str) -> dict[str, Any]:
    """The verdict the criterion of ``benchmark``/``question_type`` gives ``response``."""
    if reference.startswith("(none"):  # an abstention question (LoCoMo's adversarial ones too)
        if _ABSTAIN.search(response):
            return {"label": "Correct", "reason": "says the question cannot be answered"}
        return {"label": "Hallucination", "reason": "answers a question that cannot be answered"}
    if benchmark == "longmemeval":
        parts = _parts(reference)
        found = [p for p in parts if _contains(response, p)]
        right = _contains(response, reference) or len(found) == len(parts)
        if not right and question_type == "temporal-reasoning":
            right = any(u == ru and abs(n - rn) <= 1 for rn, ru in _counts(reference) for n, u in _counts(response))
        return _verdict(right, bool(found) and not right, response)
    # LoCoMo's J: lenient on form, dates in any format
    same = _same_time(reference, response) if question_type == "temporal" else None
    if same is not None:
        return _verdict(same, False, response)
    ref, resp = _content(reference), _content(response)
    numbers = {w for w in ref if w.isdigit()}
    right = bool(ref) and len(ref & resp) * 2 >= len(ref) and numbers <= resp  # a count must be the same
    return _verdict(right, False, response)
