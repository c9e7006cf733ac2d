"""Helpers shared by the memory-state operators: later timestamps and value substitution in memory text."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache

from ufuzz.operators.base import StateView
from ufuzz.seeds.importers.fields import value_forms

__all__ = ["later_timestamp", "latest_evidence", "mentions_value", "natural_key", "substitute", "value_forms",
           "written_in_evidence"]


def later_timestamp(view: StateView, days: int = 1) -> str:
    """An ISO timestamp strictly later than every memory stored in the state."""
    stamps = []
    for m in view.list():
        try:
            stamps.append(datetime.fromisoformat(m.timestamp))
        except ValueError:
            continue
    base = max(stamps) if stamps else datetime(2024, 1, 1)
    return (base.replace(tzinfo=None) + timedelta(days=days)).replace(microsecond=0).isoformat()


def substitute(text: str, old: str, new: str) -> str | None:
    """``text`` with the value ``old`` replaced by ``new`` (whole words), or None if ``old`` is absent. An
    indefinite article right before the value follows the new value ("a duck" -> "an alpaca", not "a alpaca")."""
    pat = re.compile(r"(?<![\w])(?:(\b[Aa]n?) )?" + re.escape(old) + r"(?![\w])", re.IGNORECASE)
    if not pat.search(text):
        return None

    def put(m: re.Match[str]) -> str:
        art = m.group(1)
        if art is None or art.lower() not in ("a", "an"):
            return new if art is None else f"{art} {new}"
        right = "an" if new[:1].lower() in "aeiou" else "a"
        return f"{right if art[0].islower() else right.capitalize()} {new}"
    return pat.sub(put, text)


def natural_key(memory_id: str) -> list:
    """Sort key that orders embedded numbers numerically (``p1-m9`` before ``p1-m10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", memory_id)]


def latest_evidence(view: StateView | None, ids) -> str:
    """The evidence memory written last: by stored timestamp where the state is at hand, else by id."""
    ids = sorted(ids, key=natural_key)
    if view is None:
        return ids[-1]
    def stamp(mid: str) -> str:
        got = view.get(mid)
        return got.timestamp if got is not None else ""
    return max(ids, key=lambda mid: (stamp(mid), natural_key(mid)))


def mentions_value(text: str, value: str) -> bool:
    """``value`` written in ``text`` as whole words, in any case."""
    if text.isascii() and value.isascii() and value.lower() not in text.lower():
        return False  # the common case, without a regex (the same answer for ASCII text)
    return _whole_word(value).search(text) is not None


@lru_cache(maxsize=1 << 14)
def _whole_word(value: str) -> re.Pattern[str]:
    """``value`` as a whole-word, case-insensitive pattern, compiled once (a campaign checks the same few
    hundred values tens of thousands of times: more patterns than ``re``'s own cache keeps)."""
    return re.compile(r"(?<![\w])" + re.escape(value) + r"(?![\w])", re.IGNORECASE)


def written_in_evidence(prov, fact) -> bool:
    """Whether ``fact``'s value is written (whole words) in its latest evidence memory (by id order, as
    :func:`latest_evidence` without a state) — what an update rewrites."""
    if not fact.evidence:
        return False
    texts = dict(prov.memory_texts)
    text = texts.get(latest_evidence(None, fact.evidence))
    return text is not None and mentions_value(text, fact.value)
