"""Answer matching and abstention detection on response text."""

from __future__ import annotations

import re
import unicodedata

ABSTAIN_PATTERNS = (
    r"\bi don'?t know\b", r"\bi do not know\b", r"\bno (?:relevant )?information\b", r"\bnot (?:sure|certain)\b",
    r"\bcannot (?:find|answer|tell)\b", r"\bcan'?t (?:find|answer|tell)\b", r"\bunknown\b", r"\bno record\b",
    r"\bnot mentioned\b", r"\bnot (?:been )?(?:stated|provided|recorded)\b", r"^\s*(?:none|n/a)\s*\.?\s*$",
)
_ABSTAIN = re.compile("|".join(ABSTAIN_PATTERNS), re.IGNORECASE)


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s:]", " ", text.lower())
    return " ".join(text.split())


def is_abstention(response: str | None) -> bool:
    return response is None or not response.strip() or bool(_ABSTAIN.search(response))


def contains_answer(response: str | None, answer: str) -> bool:
    """Whole-word, case- and punctuation-insensitive containment of ``answer`` in ``response``."""
    if not response or not answer:
        return False
    r, a = f" {normalize(response)} ", normalize(answer)
    return bool(a) and f" {a} " in r
