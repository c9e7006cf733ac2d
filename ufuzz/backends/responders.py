"""Responders: what turns retrieved memories into the response a response-level verdict judges.

A response-level verdict needs a responder that belongs to the system under test: the backend's own answer
(:meth:`~ufuzz.backends.protocol.MemoryBackend.answer`, for products and libraries that answer), or an answerer
the user configured (``--llm-uses answer``: :class:`LLMAnswerer`). The executor asks the backend first, then
the configured responder; with neither, an execution has no response and no response-level verdict.

:class:`TopEvidenceReader` echoes the top-ranked memory. It is a reader ufuzz made up, not part of any memory
system, so it runs only when asked for (``--reader top-evidence``) and its failures are labelled as the
reader's (``reader:top-evidence``) and never counted as the memory system's.
"""

from __future__ import annotations

from typing import Protocol

from ufuzz.backends.protocol import Retrieved

ABSTAIN_TEXT = "I don't know."
#: the responder label of the backend's own answer
BACKEND = "backend"
READER_PREFIX = "reader:"


def counts_for_system(responder: str | None) -> bool:
    """Whether a verdict made with ``responder`` is a verdict on the memory system (not on a made-up reader)."""
    return responder is None or not responder.startswith(READER_PREFIX)


class Responder(Protocol):
    #: the label failures carry: "answerer:<model>", "reader:top-evidence"
    name: str

    def respond(self, query: str, retrieved: list[Retrieved]) -> str: ...


class TopEvidenceReader:
    """The top-ranked memory's text when its score reaches ``threshold``, else "I don't know." (opt-in)."""

    name = READER_PREFIX + "top-evidence"

    def __init__(self, threshold: float | None) -> None:
        self.threshold = threshold

    def respond(self, query: str, retrieved: list[Retrieved]) -> str:
        if not retrieved:
            return ABSTAIN_TEXT
        top = retrieved[0]
        if self.threshold is not None and top.score < self.threshold:
            return ABSTAIN_TEXT
        return top.text


class LLMAnswerer:
    """An answer from the retrieved memories through the user's LLM endpoint (``ufuzz.llm.uses.Answerer``).

    An LLM fault surfaces as an error record of that execution, never as a failure.
    """

    def __init__(self, answerer, model: str, abstention=None) -> None:
        self.answerer = answerer
        self.name = f"answerer:{model}"
        #: what this answerer says when it abstains (a ``ufuzz.oracles.matching.Abstention``; None: built-in)
        self.abstention = abstention

    def respond(self, query: str, retrieved: list[Retrieved]) -> str:
        return self.answerer.answer(query, [r.text for r in retrieved])
