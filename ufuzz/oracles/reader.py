"""The deterministic offline reader: the response when a backend has no answerer of its own.

It answers with the top-ranked memory's text when that memory's score reaches the abstention threshold, and
abstains ("I don't know.") otherwise. It is deliberately naive — as a reader that trusts retrieval is — so
that end-to-end checks run without an LLM and every response is reproducible.
"""

from __future__ import annotations

from ufuzz.backends.protocol import Retrieved

ABSTAIN_TEXT = "I don't know."


class TopEvidenceReader:
    name = "top-evidence"

    def __init__(self, threshold: float | None) -> None:
        self.threshold = threshold

    def read(self, query: str, retrieved: list[Retrieved]) -> str:
        if not retrieved:
            return ABSTAIN_TEXT
        top = retrieved[0]
        if self.threshold is not None and top.score < self.threshold:
            return ABSTAIN_TEXT
        return top.text


class LLMReader:
    """Answers from the retrieved memories through an LLM answerer (``ufuzz.llm.uses.Answerer``).

    Used for end-to-end runs when ``--llm-uses answer`` is given; an LLM fault surfaces as a backend-side
    error record of that execution, never as a failure.
    """

    name = "llm"

    def __init__(self, answerer) -> None:
        self.answerer = answerer

    def read(self, query: str, retrieved: list[Retrieved]) -> str:
        return self.answerer.answer(query, [r.text for r in retrieved])
