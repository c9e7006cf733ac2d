"""Helpers shared by the memory-state operators: later timestamps, value substitution in memory text, and a write
through the backend's own add or update with the provenance told of what it wrote."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache

from ufuzz.backends.protocol import OpResult
from ufuzz.model import Memory, Provenance
from ufuzz.model.memory import utc_time
from ufuzz.model.provenance import DATED
from ufuzz.operators.base import Rejected, StateView
from ufuzz.seeds.importers.fields import RELATIVE_TIME, rewrite_time, text_class, value_forms

__all__ = ["later_timestamp", "latest_evidence", "mentions_value", "natural_key", "own_voice", "rewritable_evidence",
           "rewrite_value", "speaker_of", "substitute", "uncarried_evidence", "value_forms", "write_add", "write_update",
           "written_in_evidence"]


def later_timestamp(view: StateView, *, before: str | None, days: int = 1) -> str:
    """An ISO timestamp strictly later than every memory stored in the state: ``days`` after the latest one.

    ``before`` is the question's time (``Query.asked_at``: required, so that no state operator can forget it;
    None where the seed gives none). With one, the timestamp is also strictly earlier than that — halfway
    between the latest memory and the question where a whole ``days`` would pass it — since a value told after
    the question is asked cannot be its answer (a LongMemEval update dated five hours after the question date
    made "23 dozen" the expected answer to a question asked while it was still 20). Raises :class:`Rejected`
    when no second is left between the two."""
    stamps = []
    for m in view.list():
        try:
            stamps.append(_naive(m.timestamp))
        except ValueError:
            continue
    base = max(stamps) if stamps else datetime(2024, 1, 1)
    stamp = base + timedelta(days=days)
    if before is not None:
        limit = _naive(before)
        if stamp >= limit:
            stamp = base + (limit - base) / 2
        if not base < stamp.replace(microsecond=0) < limit:
            raise Rejected(f"no time left for a new memory before the question is asked ({before}): the latest "
                           f"memory is dated {base.isoformat()}", final=True)
    return stamp.replace(microsecond=0).isoformat()


def _naive(timestamp: str) -> datetime:
    """A memory's or question's ISO timestamp as a naive date-time (its zone dropped, as the writes are dated)."""
    return utc_time(timestamp).replace(tzinfo=None)


def substitute(text: str, old: str, new: str) -> str | None:
    """``text`` with the value ``old`` replaced by ``new`` (whole words), or None if ``old`` is absent. An
    indefinite article right before the value follows the new value ("a duck" -> "an alpaca", not "a alpaca")."""
    pat = re.compile(r"(?<![\w])(?:(\b[Aa]n?) )?" + re.escape(old) + r"(?![\w])", re.IGNORECASE)
    if not pat.search(text):
        return None

    def put(m: re.Match[str]) -> str:
        art = m.group(1)
        word = new
        written = m.group(0)[-len(old):]
        if written != old and written.islower() and new[:1].isupper() and new[1:].islower():
            word = new.lower()  # the answer "Running" is written "running" in the turn: so is its new value
        if art is None or art.lower() not in ("a", "an"):
            return word if art is None else f"{art} {word}"
        right = "an" if word[:1].lower() in "aeiou" else "a"
        return f"{right if art[0].islower() else right.capitalize()} {word}"
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
    """Whether an update can rewrite ``fact``'s evidence: its value is written (whole words) in one of its
    evidence memories, or it is a date one evidence memory tells by one relative time ("yesterday")."""
    return rewritable_evidence(prov, fact, None) is not None


def uncarried_evidence(prov, fact) -> list[str]:
    """``fact``'s evidence memories that do not carry its value themselves: they neither write it (digits or word)
    nor, for a date, tell it by a relative time — support by the claim alone ("Can't wait!" for "excited").
    An update of the value cannot supersede them (they do not state the old value), and does not make them
    support the new one."""
    texts = dict(prov.memory_texts)
    out = []
    for m in fact.evidence:
        text = texts.get(m, "")
        if any(mentions_value(text, v) for v in value_forms(fact.value)):
            continue
        if fact.value_type in DATED and RELATIVE_TIME.search(text) is not None:
            continue
        out.append(m)
    return out


def speaker_of(text: str, names: dict[str, str]) -> str | None:
    """The speaker a conversation turn is written as (``"Caroline: …"``, ``"User: …"``), when the name before its
    first colon is one of ``names`` (lower-cased name -> name); None for text that is no one's turn."""
    head, sep, _ = text.partition(":")
    return names.get(head.strip().lower()) if sep and len(head) <= 40 else None


def own_voice(prov, fact, ids, texts: dict[str, str]) -> list[str]:
    """Those of ``ids`` that are ``fact``'s person speaking: in a conversation between named speakers, an update
    rewrites what the person said — never another speaker's echo of it ("Wow, 20 dozen eggs is a lot!"), which
    would leave the person's own statement of the old value standing beside a "new" value nobody stated.
    Memories that are no one's turn (notes, first-person texts) are all kept. ``texts``: memory id -> text."""
    names = {e.name.lower(): e.name for e in prov.entities}
    spoken = {m: speaker_of(texts.get(m, ""), names) for m in ids}
    if not any(spoken.values()):
        return list(ids)
    return [m for m in ids if spoken[m] is not None and spoken[m].lower() == fact.entity.lower()]


def answers_in_kind(prov, memory_id: str, value: str) -> bool:
    """Whether the turn ``memory_id`` states ``value`` only as another speaker's turn right before it had said it
    ("Jon: … contemporary is my top pick. What's your fave?" — "Gina: Yeah, me too! Contemporary dance is so
    expressive"): rewritten alone, its new value would agree with nothing ("Yeah, me too! Swing dance …") and
    would not say what it is the value of, so no update rewrites such a turn (LoCoMo hand audit)."""
    names = {e.name.lower(): e.name for e in prov.entities}
    before = None
    for mid, text in prov.memory_texts:
        if mid == memory_id:
            mine = speaker_of(text, names)
            theirs = speaker_of(before, names) if before is not None else None
            return (mine is not None and theirs is not None and theirs.lower() != mine.lower()
                    and mentions_value(before, value))
        before = text
    return False


def rewritable_evidence(prov, fact, view: StateView | None) -> str | None:
    """The evidence memory an update of ``fact`` rewrites: the latest of the person's own (:func:`own_voice`) that
    writes the value (whole words), else — for a date told by one relative time — the one evidence memory that
    tells it so; None when neither."""
    if not fact.evidence:
        return None
    texts = dict(prov.memory_texts)
    writing = own_voice(prov, fact, [m for m in fact.evidence if mentions_value(texts.get(m, ""), fact.value)],
                        texts)
    writing = [m for m in writing if not answers_in_kind(prov, m, fact.value)]
    if writing:
        return latest_evidence(view, writing)
    if fact.value_type not in DATED:
        return None
    # the one evidence memory telling the event by one relative time (two: which one dates it cannot be told)
    telling = own_voice(prov, fact, [m for m in fact.evidence
                                     if rewrite_time(texts.get(m, ""), fact.value, fact.value, fact.valid_from)
                                     is not None], texts)
    return telling[0] if len(telling) == 1 else None


def rewrite_value(text: str, fact, value: str) -> str | None:
    """``text`` stating ``value`` where it states ``fact``'s value: the value substituted where written, or,
    for a date told by one relative time, that time replaced by the new date."""
    if text_class(fact.value) is not None and len(_whole_word(fact.value).findall(text)) > 1:
        return None  # a common word written twice may be two words ("shoes for running … been running longer")
    new = substitute(text, fact.value, value)
    if new is None and fact.value_type in DATED:
        new = rewrite_time(text, value, fact.value, fact.valid_from)
    return new


def write_add(view: StateView, prov: Provenance, mem: Memory, what: str = "add") -> tuple[OpResult, Provenance]:
    """``mem`` added through the backend's own add, and ``prov`` knowing the text of every memory the add wrote (a
    system may store it under ids of its own). A refusal rejects the mutant, naming ``what`` was refused."""
    res = view.add(mem)
    if not res.ok:
        raise Rejected(f"backend refused {what}: {res.detail}")
    for wid in res.written or (mem.id,):
        prov = prov.with_memory(wid, mem.text)
    return res, prov


def write_update(view: StateView, prov: Provenance, old_id: str, new: Memory, entity: str, attribute: str,
                 value: str) -> tuple[OpResult, Provenance]:
    """``new`` written over ``old_id`` through the backend's own update, and ``prov`` told of it: ``value`` the new
    value of ``entity``'s ``attribute`` from ``new``'s time on, on the memories the update wrote (with their text),
    the ones it removed gone. A refusal rejects the mutant."""
    res = view.update(old_id, new)
    if not res.ok:
        raise Rejected(f"backend refused update: {res.detail}")
    written = res.written or (new.id,)
    prov = prov.with_update(entity, attribute, value, written, new.timestamp, removed_ids=res.removed)
    for wid in written:
        prov = prov.with_memory(wid, new.text)
    return res, prov
