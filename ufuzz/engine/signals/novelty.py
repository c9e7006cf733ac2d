"""Novelty: a ranking, or for hidden retrieval a response, not seen before for the mutant's seed.

Visible retrieval: per seed, the ordered top-k signatures seen (the tuple of retrieved ids in rank order); hidden
retrieval (a backend that exposes a response and no ranking): per seed, the hashes of the normalised responses
seen (:func:`response_hash`). A mutant showing a new one is kept; it says nothing on an
effect by itself (where no divergence is measured, whether the mutant was kept does).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import defaultdict

from ufuzz.engine.signals.base import Observation, Reading, Signal

_PUNCT_EDGES = re.compile(r"^[\W_]+|[\W_]+$")
_SPACES = re.compile(r"\s+")
ABSTAIN_TOKEN = "\x00abstain"
NO_RESPONSE_TOKEN = "\x00none"


def normalize_response(response: str | None, abstained: bool = False) -> str:
    """Unicode-compatible, case-folded, whitespace-collapsed text without leading/trailing punctuation.

    An abstention and a missing response are distinct from every text.
    """
    if abstained:
        return ABSTAIN_TOKEN
    if response is None:
        return NO_RESPONSE_TOKEN
    text = unicodedata.normalize("NFKC", response).casefold()
    text = _SPACES.sub(" ", text).strip()
    return _PUNCT_EDGES.sub("", text)


def response_hash(response: str | None, abstained: bool = False) -> str:
    return hashlib.sha256(normalize_response(response, abstained).encode("utf-8")).hexdigest()


class Novelty(Signal):
    name = "novelty"
    order = 30

    def __init__(self) -> None:
        self.signatures: dict[str, set[tuple[str, ...]]] = defaultdict(set)  # seed id -> signatures
        self.responses: dict[str, set[str]] = defaultdict(set)  # seed id -> normalised response hashes

    def observe(self, obs: Observation) -> Reading:
        ex = obs.execution
        seen, key = ((self.responses[obs.seed_id], response_hash(ex.response, ex.abstained)) if obs.hidden
                     else (self.signatures[obs.seed_id], ex.signature))
        new = key not in seen
        seen.add(key)
        return Reading(value=new, retain=new)

    def totals(self) -> dict[str, int]:
        return {"signatures": sum(len(v) for v in self.signatures.values()),
                "responses": sum(len(v) for v in self.responses.values())}
