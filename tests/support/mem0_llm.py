"""A rule-based stand-in for the language model behind mem0's extraction (``write_mode=infer``).

mem0ai 2.2.1 sends one chat request per ``add(infer=True)``: its ``ADDITIVE_EXTRACTION_PROMPT`` as the system
message and a user message of ``## Section`` blocks (``## Existing Memories`` a JSON list of ``{"id",
"text"}``, ``## New Messages`` the parsed ``role: content`` lines, ``## Observation Date`` …), and parses the
reply with ``json.loads(...).get("memory", [])`` into ``{"id", "text", "attributed_to"?}`` items.

The stand-in extracts every sentence of the new messages as one memory, without the role prefix, and skips
a sentence an existing memory already says word for word (the deduplication mem0's prompt asks for). It
counts what it was asked (``calls``) so tests can tell extraction calls from others.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


#: how mem0ai 2.2.1's ADDITIVE_EXTRACTION_PROMPT opens (matched as text: importing mem0 here would set it up,
#: telemetry and config directory included, in every process that starts this server)
_OPENING = "# ROLE\n\nYou are a Memory Extractor"


def is_extraction(system: str) -> bool:
    return system.lstrip().startswith(_OPENING)


def section(user: str, name: str) -> str:
    m = re.search(rf"^## {re.escape(name)}\n(.*?)(?=\n\n## |\n\n# Output:|\Z)", user, re.S | re.M)
    return m.group(1) if m else ""


def extract(user: str) -> dict[str, Any]:
    """``{"memory": [...]}`` for one extraction request's user message."""
    try:
        existing = {str(m.get("text", "")).strip() for m in json.loads(section(user, "Existing Memories") or "[]")}
    except (ValueError, AttributeError):
        existing = set()
    out: list[dict[str, str]] = []
    for line in section(user, "New Messages").splitlines():
        role, sep, content = line.partition(": ")
        if not sep or role not in ("user", "assistant"):
            continue
        for sentence in _SENTENCE.split(content.strip()):
            sentence = sentence.strip()
            if sentence and sentence not in existing and all(sentence != m["text"] for m in out):
                out.append({"id": str(len(out)), "text": sentence, "attributed_to": role})
    return {"memory": out}
