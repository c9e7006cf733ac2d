"""A rule-based stand-in for the language model behind A-Mem's note construction and memory evolution.

A-Mem (a-mem 0.0.x, ``agentic_memory``) sends, with the system line ``You must respond with a JSON object.``,
two prompts: the note analysis (``Generate a structured analysis of the following content by:`` … ``Content
for analysis:`` + the note), parsed as ``{"keywords", "context", "tags"}``, and the evolution decision
(``You are an AI memory evolution agent`` … the neighbours one per line, ``memory_id:<id>\\t…``), parsed as
``{"should_evolve", "actions", "suggested_connections", "tags_to_update", "new_context_neighborhood",
"new_tags_neighborhood"}``.

The stand-in's analysis: the note's first three content words as keywords, a one-sentence context naming its
first capitalised word, two tags. Its evolution: ``strengthen`` a link to the first neighbour (A-Mem then
sets the note's tags to ``tags_to_update``); neighbours are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

SYSTEM = "You must respond with a JSON object."
_ANALYSIS = "Generate a structured analysis of the following content by:"
_EVOLUTION = "You are an AI memory evolution agent"
_STOP = {"the", "a", "an", "is", "was", "to", "of", "in", "on", "at", "and", "her", "his", "their", "she", "he",
         "they", "it", "that", "this", "with", "for", "from", "now", "user", "assistant"}


def handles(system: str, user: str) -> bool:
    return system == SYSTEM and (user.lstrip().startswith(_ANALYSIS) or _EVOLUTION in user)


def answer(user: str) -> dict[str, Any]:
    if user.lstrip().startswith(_ANALYSIS):
        content = user.rsplit("Content for analysis:", 1)[-1].strip()
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]+", content) if w.casefold() not in _STOP]
        name = next((w for w in words if w[0].isupper()), "someone")
        return {"keywords": [w.casefold() for w in words[:3]], "context": f"A personal note about {name}.",
                "tags": ["personal", "note"]}
    ids = re.findall(r"memory_id:(\S+)\t", user)
    return {"should_evolve": bool(ids), "actions": ["strengthen"] if ids else [],
            "suggested_connections": ids[:1], "tags_to_update": ["personal", "note", "linked"],
            "new_context_neighborhood": [], "new_tags_neighborhood": []}
