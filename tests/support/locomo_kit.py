"""Small LoCoMo files for the importer's tests: a conversation of two speakers, Ana and Ben, written as the
benchmark writes one, and its import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def conversation(*sessions: tuple[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """Ana and Ben's conversation: each session its date-time ("1:00 pm on 8 May, 2023") and its turns (speaker,
    text), numbered D<session>:<turn> as LoCoMo numbers them."""
    conv: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for s, (when, turns) in enumerate(sessions, start=1):
        conv[f"session_{s}_date_time"] = when
        conv[f"session_{s}"] = [{"speaker": who, "dia_id": f"D{s}:{t}", "text": text}
                                for t, (who, text) in enumerate(turns, start=1)]
    return conv


def import_locomo(tmp_path: Path, conv: dict[str, Any], qa: list[dict[str, Any]]) -> Any:
    """The import (:func:`ufuzz.seeds.importers.import_file`) of a file holding ``conv`` and its questions ``qa``."""
    from ufuzz.seeds.importers import import_file

    path = tmp_path / "conv.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": qa}]))
    return import_file("locomo", path)
