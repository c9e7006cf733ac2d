"""Answer matching and abstention detection on response text.

What counts as an abstention is configurable per responder (:class:`Abstention`): a product declares its own
phrases in its TOML (``[answer] abstain_phrases = ["No matching note."]``; ``abstain_defaults = false`` drops
the built-in patterns, e.g. for a product whose real answers say "unknown"), an LLM answerer takes
``--abstain-phrase`` / ``--no-default-abstain-phrases``. A phrase matches as whole words, case- and
punctuation-insensitively, anywhere in the response. An empty response is always an abstention.

The built-in patterns (:data:`ABSTAIN_PATTERNS`, case-insensitive regular expressions): "I don't know",
"I do not know", "no (relevant) information", "not sure/certain", "cannot/can't find/answer/tell", "unknown",
"no record", "not mentioned", "not (been) stated/provided/recorded", and a response that is only "none" or "n/a".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Abstention:
    """What one responder says when it abstains: its own ``phrases`` and, unless ``defaults`` is False, the
    built-in patterns."""

    phrases: tuple[str, ...] = ()
    defaults: bool = True

    def __post_init__(self) -> None:
        for p in self.phrases:
            if not isinstance(p, str) or not normalize(p):
                raise ValueError(f"abstention phrase {p!r} has no words")

    def test(self, response: str | None) -> bool:
        if response is None or not response.strip():
            return True
        if self.defaults and _ABSTAIN.search(response):
            return True
        return any(contains_answer(response, p) for p in self.phrases)

    def to_dict(self) -> dict[str, object]:
        return {"phrases": list(self.phrases), "defaults": self.defaults}


DEFAULT = Abstention()


def is_abstention(response: str | None, abstention: Abstention | None = None) -> bool:
    return (abstention or DEFAULT).test(response)


def contains_answer(response: str | None, answer: str) -> bool:
    """Whole-word, case- and punctuation-insensitive containment of ``answer`` in ``response``."""
    if not response or not answer:
        return False
    r, a = f" {normalize(response)} ", normalize(answer)
    return bool(a) and f" {a} " in r
