"""LoCoMo (``locomo10.json``): one checkpoint per sample, one seed per QA item.

A sample has ``sample_id``, ``conversation`` (``speaker_a``, ``speaker_b``, ``session_N`` turn lists of
``{speaker, dia_id "D<s>:<t>", text, blip_caption?}``, ``session_N_date_time`` like ``"1:56 pm on 8 May,
2023"``), ``qa`` items ``{question, answer | adversarial_answer, evidence [dia_id], category}``
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial), ``observation``
(``{session_N_observation: {speaker: [[fact, dia_id], ...]}}``), ``event_summary``
(``{events_session_N: {speaker: [event, ...], date}}``) and ``session_summary`` (not used: it restates the
observations).

Memories are the turns (id = ``dia_id``, timestamp = session date plus the turn index in seconds, text
``"Speaker: text"`` plus ``" [image: caption]"``). What the benchmark knows goes into the checkpoint and
the seed, never into memory text:

* observations and event summaries are facts of the speaker they describe (``value_type`` ``observation`` /
  ``event``, see :mod:`ufuzz.seeds.speakers`), observations evidenced by their turns; the pronoun the
  annotations use for each speaker is kept on the speaker's entity;
* each seed carries its ``category`` in ``Seed.metadata`` and the LLM-judge ("J") criterion of it on its
  reference (:mod:`ufuzz.seeds.criteria`); each answerable reference is tagged
  ``extractive`` (the answer is written in an evidence turn) or ``abstractive``;
* an answerable question contributes the fact (entity = the speaker it asks about, attribute = the
  question's head noun phrase, value = the answer, evidence = its dia_ids). A temporal or single-hop
  question asked of the *other* speaker is a misattribution (``replacement_targets["speaker"]``, the
  speaker-swap operator) where nothing of that speaker's (annotations, own turns) supports it and the
  benchmark does not ask it of them itself;
* a category-5 (adversarial) question is an abstention whose evidence ids are decoys (invalidated); its
  ``adversarial_answer`` is no stale answer (it is true of the other speaker, not out of date: answering with
  it is an unsupported answer like any other). When its evidence is the other speaker's turns, the question
  asked of that speaker has the benchmark's answer: a fact of theirs, so the swap back is a target change
  with the benchmark's own answer and evidence.

Only moves an operator can carry out are offered: an update where the answer is verbatim in its latest
evidence turn, a delete where it is written out at all (abstractive answers get the unrelated edit only).

Real-file quirks are repaired or skipped with a counted warning: evidence strings holding several ids
(``"D8:6; D9:17"``) are split, zero-padded or spaced ids (``"D30:05"``) normalised, ids with no turn
(``"D"``, ``"D99:1"``) dropped; date keys without a session, sessions without a (parseable) date,
malformed and duplicate turns, malformed observations and events.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import Entity, Fact, Memory, Rubric
from ufuzz.model.provenance import DATED
from ufuzz.seeds.criteria import benchmark_rubric
from ufuzz.seeds.importers._common import (
    JUDGEMENT,
    Builder,
    ImportResult,
    Pending,
    RecordError,
    answer_form,
    answer_text,
    can_update,
    each_record,
    finish,
    need,
    read_records,
    snippets,
)
from ufuzz.seeds.importers.fields import (
    Extractor,
    establish_fields,
    mentions_word,
    value_forms,
    value_type_of,
    weekday_conflict,
)
from ufuzz.seeds.speakers import (
    key_terms,
    name_pattern,
    pronoun_of,
    related,
    reword_about,
    shared_terms,
    supports,
)

_DATE = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
                   re.I)
_SESSION = re.compile(r"^session_(\d+)$")
_SESSION_DATE = re.compile(r"^session_(\d+)_date_time$")
_DIA = re.compile(r"^D\s*(\d+)\s*:\s*(\d+)$", re.I)
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july",
                                       "august", "september", "october", "november", "december"), start=1)}
#: a yes/no question: asked of the wrong person it is answered "no", not abstained from
YES_NO = re.compile(r"^\s*(?:did|does|do|is|was|are|were|has|have|had|can|could|will|would)\b(?!['’]s\b)",
                    re.IGNORECASE)  # not "Will's …"
#: a turn denying what it is asked about ("Nope, never been to something like that.")
DENIAL = re.compile(r"\b(?:nope|never|not really|(?:have|has|had|did|do|does)n['’]t)\b", re.IGNORECASE)
#: an adversarial_answer that is no answer ("Not mentioned"): no swap back is built on it
NON_ANSWER = re.compile(r"(?i)(not mentioned|no information|unknown|none|n/?a)\.?")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: categories whose questions ask one specific thing a speaker did or said, so that nobody having said it of
#: the other speaker makes the swapped question unanswerable; multi-hop questions ask for lists that anyone
#: may have ("What activities …"), open-domain ones for inferences nothing lexical can rule out
SWAP_CATEGORIES = (2, 4)


def _rubric(category: Any, abstain: bool) -> Rubric | None:
    """The LLM-judge ("J") criterion of a question of ``category`` (None for an unknown category)."""
    return benchmark_rubric("locomo", CATEGORIES[category], abstain) if category in CATEGORIES else None


def parse_date(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    m = _DATE.match(raw)
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    mon = _MONTHS.get(month.lower()) or next((v for k, v in _MONTHS.items() if k.startswith(month.lower()[:3])),
                                             None)
    if mon is None:
        return None
    h = int(hour) % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year), mon, int(day), h, int(minute or 0))
    except ValueError:
        return None


#: the name of this format (``ufuzz seeds import --format locomo``): the module is an importer plugin
FORMAT = "locomo"


def load(path: str | Path, *, extractor: Extractor | None = None, name: str | None = None) -> ImportResult:
    path = Path(path)
    records = read_records(path, containers=("samples", "data"))
    b = Builder(name=name or path.stem, source="locomo", siblings=True)
    each_record(path, records, "sample_id", lambda i, rec: _sample(b, i, rec, extractor))
    return finish(b)


def _turn_memories(b: Builder, conv: dict[str, Any]) -> list[Memory]:
    sessions = {int(m.group(1)): k for k in conv if (m := _SESSION.match(k))}
    dated = {int(m.group(1)): conv[k] for k in conv if (m := _SESSION_DATE.match(k))}
    if set(dated) - set(sessions):  # real files carry date keys for sessions they do not contain
        b.warnings["date_without_session"] += len(set(dated) - set(sessions))
    memories: list[Memory] = []
    seen: set[str] = set()
    last: datetime | None = None
    for n in sorted(sessions):
        turns = conv[sessions[n]]
        if not isinstance(turns, list):
            raise RecordError(f"field 'conversation.session_{n}' must be list, got {type(turns).__name__}")
        ts = parse_date(dated.get(n))
        if ts is None:
            b.warnings["session_date_missing" if n not in dated else "session_date_unparseable"] += 1
            if last is None:
                b.warnings["session_skipped_no_date"] += 1
                continue
            ts = last + timedelta(hours=1)  # keep order: just after the previous session
        last = ts + timedelta(seconds=len(turns))
        for t, turn in enumerate(turns):
            if not (isinstance(turn, dict) and isinstance(turn.get("dia_id"), str)
                    and isinstance(turn.get("text"), str) and isinstance(turn.get("speaker"), str)):
                b.warnings["turn_malformed"] += 1
                continue
            mid = turn["dia_id"].strip()
            if mid in seen:
                b.warnings["duplicate_dia_id"] += 1
                continue
            seen.add(mid)
            text = f"{turn['speaker']}: {turn['text']}"
            cap = turn.get("blip_caption")
            if isinstance(cap, str) and cap.strip():
                text += f" [image: {cap.strip()}]"
            memories.append(Memory(id=mid, text=text, timestamp=(ts + timedelta(seconds=t)).isoformat(),
                                   metadata={"source": "locomo", "session": n, "speaker": turn["speaker"]}))
    return memories


def clean_evidence(raw: Any, known: set[str], warnings: Any) -> list[str]:
    """Split, normalise and filter evidence ids; every repair or drop is a counted warning."""
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    if not isinstance(raw, (list, str)) and raw is not None:
        warnings["evidence_malformed"] += 1
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            warnings["evidence_malformed"] += 1
            continue
        parts = [p for p in re.split(r"[;,]\s*|\s+(?=D)", item.strip()) if p.strip()]
        if len(parts) > 1:
            warnings["evidence_split"] += 1
        for part in parts:
            part = part.strip()
            m = _DIA.match(part)
            if not m:
                warnings["evidence_malformed"] += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                warnings["evidence_repaired"] += 1
            if norm not in known:
                warnings["evidence_unknown_id"] += 1
                if not any(k.startswith(f"D{int(m.group(1))}:") for k in known):
                    # its whole session is missing: the file was cut short (see seeds import --allow-partial)
                    warnings["evidence_in_missing_session"] += 1
                continue
            if norm not in out:
                out.append(norm)
    return out


def _sample(b: Builder, index: int, rec: Any, extractor: Extractor | None) -> None:
    sid = str(need(rec, "sample_id", (str, int)))
    conv = need(rec, "conversation", dict)
    qa = need(rec, "qa", list)
    speakers = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str) and s.strip()]
    if len(speakers) < 2:
        b.warnings["speaker_missing"] += 1
    memories = _turn_memories(b, conv)
    speakers += sorted({m.metadata["speaker"] for m in memories} - set(speakers))
    if not memories:
        b.dropped["no_memories"] += len(qa)
        return
    known = {m.id for m in memories}
    ts_of = {m.id: m.timestamp for m in memories}
    text_of = {m.id: m.text for m in memories}
    speaker_of = {m.id: m.metadata["speaker"] for m in memories}
    notes = _observations(b, rec.get("observation"), known, ts_of, speakers) + \
        _events(b, rec.get("event_summary"), conv, speakers)
    notes_of = {s: [f.value for f in notes if f.entity == s] for s in speakers}
    pronouns = {s: pronoun_of(notes_of[s], s, speakers) for s in speakers}
    items: list[tuple[int, dict[str, Any], Any, bool, list[str]]] = []
    for j, item in enumerate(qa):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
            raise RecordError(f"qa[{j}] must be an object with a non-empty 'question'")
        cat = item.get("category")
        adversarial = cat == 5 or ("answer" not in item and "adversarial_answer" in item)
        items.append((j, item, cat, adversarial, clean_evidence(item.get("evidence"), known, b.warnings)))
    pending: list[Pending] = []
    taken: set[tuple[str, str]] = set()  # (entity, attribute) of answerable questions
    for j, item, cat, adversarial, evidence in sorted(items, key=lambda x: x[3]):  # answerable first
        answer = None if adversarial else answer_text(item.get("answer"))
        if adversarial and YES_NO.match(item["question"]):
            # "Did Caroline make the black and white bowl?" has an answer, "No", and the benchmark's evidence (Melanie:
            # "Yeah, I made this bowl") is what shows it: no abstention, and that turn no decoy (hand audit, mem0)
            b.dropped["adversarial_yes_no"] += 1
            continue
        if not adversarial and answer is None:
            b.dropped["no_answer"] += 1
            continue
        if not adversarial and speculative(item["question"], answer, cat):
            b.dropped["speculative_answer"] += 1  # an inference, not a fact a memory holds: no failure rests on it
            continue
        marked: list[str] = []  # benchmark evidence of the asked speaker that its words alone cannot find
        if not adversarial and evidence:
            evidence = own_evidence(b, evidence, item["question"], answer, text_of, speaker_of, speakers)
            if not evidence:
                b.dropped["evidence_other_speaker"] += 1
                continue
            forms = " ".join(value_forms(answer))  # "3" is written "three" in the turn
            kept = [e for e in evidence if related(text_of[e], item["question"], forms, speakers)]
            if len(kept) < len(evidence):
                b.warnings["evidence_unrelated"] += len(evidence) - len(kept)
            if not kept:
                b.dropped["evidence_unrelated"] += 1
                continue
            marked = [e for e in evidence if e not in kept and not asks(text_of[e])]  # a question states nothing
            evidence = kept
        if not adversarial and not evidence:
            b.dropped["no_evidence"] += 1
            continue
        if not adversarial and weekday_conflict(answer, [text_of[e] for e in evidence]):
            b.dropped["answer_contradicts_evidence"] += 1
            continue
        if not adversarial and len(evidence) > 1 and COUNT.match(item["question"]):
            # a count over several turns is answered only by all of them: "is any evidence in the top-k" says
            # nothing of it (a retriever finding one of two beach trips has not found the answer "2")
            b.dropped["count_over_turns"] += 1
            continue
        if not adversarial and len(evidence) + len(marked) > 1 and SPAN.match(item["question"]):
            # so is a span between turns (hand audit: "How long did it take for Jon to open his studio?", marked on
            # the turn he started and the one he opened: either alone is no answer, and a baseline failure on it
            # was read as false)
            b.dropped["span_over_turns"] += 1
            continue
        fields = establish_fields(item["question"], snippets(memories, evidence), extractor=extractor,
                                  warnings=b.warnings, names=speakers, answerable=not adversarial)
        if fields is None:
            b.dropped["no_fields"] += 1
            continue
        meta = {"category": cat, "category_name": CATEGORIES[cat]} if cat in CATEGORIES else {}
        qid = f"locomo:{sid}:q{j}"
        if answer is not None:
            form = answer_form(answer, [text_of[e] for e in evidence])
            near = neighbours(evidence, text_of, speaker_of, item["question"], answer, speakers)
            near += tuple(i for i in carriers(answer, item["question"], fields.entity, memories, speakers,
                                              evidence) if i not in evidence and i not in near)
            near += tuple(i for i in stating_turns(answer, item["question"], fields.entity, memories, speakers,
                                                   evidence) if i not in evidence and i not in near)
            # the benchmark's own marks stay evidence (a retriever finding one has found what it marks), and so do
            # turns that state the answer
            support = tuple(evidence) + tuple(marked) + near
            ok = can_update(answer, memories, support)
            if near:  # the benchmark marks one turn where others say the same: they support it too
                b.warnings["supporting_neighbours"] += len(near)
            if marked:
                b.warnings["evidence_unrelated_kept"] += len(marked)
            fact = Fact(fields.entity, fields.attribute, answer, support,
                        value_type=value_type_of(answer, speakers), valid_from=max(ts_of[e] for e in evidence))
            taken.add((fields.entity, fields.attribute))
            pending.append(Pending(qid=qid, text=item["question"], fields=fields, answer=answer,
                                   supporting=support, facts=(fact,), answer_form=form, metadata=meta,
                                   updatable=ok, rubric=_rubric(cat, abstain=False)))
            continue
        other_answer = answer_text(item.get("adversarial_answer"))
        if other_answer is not None and NON_ANSWER.fullmatch(other_answer.strip()):
            other_answer = None  # "Not mentioned": the benchmark gives no answer for the other speaker either
        facts: tuple[Fact, ...] = ()
        owners = {speaker_of[e] for e in evidence}
        # the adversarial question names one speaker but its evidence is the other's: asked of the speaker who
        # said it, the benchmark's own answer holds (the swap back is a target change with that answer)
        if (other_answer and len(owners) == 1 and fields.entity in speakers and next(iter(owners)) != fields.entity
                and next(iter(owners)) in speakers and (next(iter(owners)), fields.attribute) not in taken):
            owner = next(iter(owners))
            facts = (Fact(owner, fields.attribute, other_answer, tuple(evidence),
                          value_type=value_type_of(other_answer, speakers),
                          valid_from=max(ts_of[e] for e in evidence)),)
            taken.add((owner, fields.attribute))
        # the other speaker's answer is not out of date (no stale answer): answering with it is an unsupported
        # answer, as any answer to this question is
        # the asked person's own denial ("Melanie: Nope, never been to something like that.", marked for "the
        # poetry reading Melanie attended") says the question has no answer: it is no decoy (hand audit, mem0)
        decoys = tuple(e for e in evidence if not (speaker_of[e] == fields.entity and DENIAL.search(text_of[e])))
        if len(decoys) < len(evidence):
            b.warnings["adversarial_denial_not_decoy"] += len(evidence) - len(decoys)
        pending.append(Pending(qid=qid, text=item["question"], fields=fields, answer=None, facts=facts,
                               decoys=decoys, metadata=meta, rubric=_rubric(cat, abstain=True)))
    # (entity, attribute) the state has a fact for, or the benchmark asks about (its own adversarial questions)
    keys = {(f.entity, f.attribute) for p in pending for f in p.facts} | \
        {(p.fields.entity, p.fields.attribute) for p in pending}
    said_by = {s: notes_of[s] + [m.text for m in memories if m.metadata["speaker"] == s] for s in speakers}
    for p in pending:
        if p.answer is not None and p.metadata.get("category") in SWAP_CATEGORIES:
            other = _swap_target(p.text, p.fields.entity, p.fields.attribute, speakers, said_by, pronouns,
                                 p.answer, keys)
            if other:
                p.extra_targets["speaker"] = other
    b.add_checkpoint(f"locomo-cp:{sid}", memories, pending,
                     entities=[Entity(s, "person", pronouns.get(s)) for s in speakers], base_facts=notes)


#: turns before and after a marked evidence turn that may repeat what it says
NEAR = 3
#: an image caption appended to a turn ("[image: a photo of ...]")
_IMAGE = re.compile(r"\s*\[image:[^\]]*\]\s*$")


def neighbours(evidence: list[str], text_of: dict[str, str], speaker_of: dict[str, str], question: str,
               answer: str, speakers: list[str]) -> tuple[str, ...]:
    """Turns of the same session within :data:`NEAR` turns of an evidence turn, by the same speaker, that share
    at least two and half of the key terms of question and answer, and that is no question itself: LoCoMo marks
    one turn where the speaker says the same thing twice ("the meteor shower was amazing ... awe-inspiring" two
    turns before the marked "in awe of the universe"), and a retriever finding the unmarked one has found the
    evidence. A test may miss a failure for it, never report one that is not."""
    forms = " ".join(value_forms(answer))  # "3" is written "three" in the turn
    terms = key_terms(question, speakers) | key_terms(forms, speakers)
    need = max(2, math.ceil(len(terms) / 2))
    if len(terms) < need:
        return ()
    out: list[str] = []
    for e in evidence:
        m = _DIA.match(e)
        if m is None:
            continue
        session, turn = int(m.group(1)), int(m.group(2))
        for t in range(turn - NEAR, turn + NEAR + 1):
            nid = f"D{session}:{t}"
            if (nid in text_of and nid not in evidence and nid not in out and speaker_of.get(nid) == speaker_of[e]
                    and not _IMAGE.sub("", text_of[nid]).rstrip().endswith("?")
                    and shared_terms(text_of[nid], terms) >= need
                    and states(text_of[nid], answer, speakers, question)):
                out.append(nid)
    return tuple(out)


#: a question asking how someone feels or finds something ("How does Jon feel about …"), not how many or long
MANNER = re.compile(r"(?i)\s*how\b(?!\s+(?:many|much|long|old|often|far|soon)\b)")


def states(text: str, answer: str, speakers: Sequence[str], question: str = "") -> bool:
    """Whether ``text`` carries ``answer``: writes it (digits or word for a small number) as whole words, or
    holds at least half of its key terms ("it felt awe-inspiring" for "in awe of the universe"). A yes/no
    judgement, a date and a one-word answer to a "how" question are carried by the claim or the event the question names (the date
    of a LoCoMo answer is the session's, told as "last year"; "excited" is told as "can't wait"), so by a turn
    holding at least half of the question's key terms; with ``question`` empty, by none. A number is carried
    only where it is written."""
    a = answer.strip()
    if not a:
        return False
    if not JUDGEMENT.match(a) and any(mentions_word([text], v) for v in value_forms(a)):
        return True
    own = key_terms(a, speakers)
    if (JUDGEMENT.match(a) or value_type_of(a, speakers) in DATED
            or (len(own) == 1 and len(a.split()) == 1 and MANNER.match(question))):
        # a yes, a date, one word for how someone feels ("excited" is said "can't wait"): the claim or the event
        terms = key_terms(question, speakers)
        return bool(terms) and shared_terms(text, terms) >= math.ceil(len(terms) / 2)
    return bool(own) and shared_terms(text, own) >= math.ceil(len(own) / 2)


def stating_turns(answer: str, question: str, entity: str, memories: list[Memory], speakers: list[str],
                  evidence: Sequence[str] = ()) -> tuple[str, ...]:
    """Turns of ``entity`` anywhere in the conversation, no question themselves, that write the whole answer
    ("Sweden", "Charlotte's Web") as whole words and share two (or all, or half) of the question's key terms besides
    the answer's own:
    LoCoMo marks one turn where the speaker says it again elsewhere, and a retriever finding that turn has found
    the answer. Answers of no key term of their own (a number, a year, a yes) are written in too many turns to
    tell, and add nothing."""
    a = answer.strip()
    own = key_terms(a, speakers)
    rest = key_terms(question, speakers) - own
    if not a or JUDGEMENT.match(a) or not own or not rest:
        return ()
    marked = set(evidence)
    need = min(len(rest), max(2, math.ceil(len(rest) / 2)))  # "Glad to hear it" is no attitude to a festival
    if len(own) >= 2 and not _written_whole(a, [m.text for m in memories if m.id in marked]):
        # the benchmark marked turns that do not write the answer ("What is Caroline's identity?" marked on "The
        # transgender stories were so inspiring!"): a phrase of two key terms or more, written whole by the person
        # asked about, is that answer wherever it is ("my own journey as a transgender woman")
        need = 0
    return tuple(m.id for m in memories
                 if m.id not in marked and m.metadata.get("speaker") == entity and mentions_word([m.text], a)
                 and not asks(m.text) and shared_terms(m.text, rest) >= need)


#: a hedged answer ("Likely no", "Probably yes; …", "Somewhat, but …") or a question asking what someone would
#: or might do or be: an inference from the conversation, not a fact one of its turns holds
HEDGED_ANSWER = re.compile(r"(?i)^\s*(?:most\s+)?(?:likely|probably|possibly|maybe|perhaps|somewhat|presumably)\b")
HYPOTHETICAL = re.compile(r"(?i)\b(?:would|might|could)\b.*|\blikely\b")
#: the benchmark's category of commonsense/inference questions (open-domain)
INFERENCE_CATEGORY = 3


def speculative(question: str, answer: str | None, category: Any) -> bool:
    """Whether the benchmark's answer is an inference (dropped at import, counted): an open-domain
    (category 3) question, a hedged answer, or a question asking what someone would, might or could do.
    Its evidence is circumstantial ("Would Caroline likely have Dr. Seuss books?" on a turn about classic
    children's books), so neither a missing nor a found turn says anything of the memory under test."""
    return (category == INFERENCE_CATEGORY or (answer is not None and HEDGED_ANSWER.match(answer) is not None)
            or HYPOTHETICAL.search(question) is not None)


#: a relation after a speaker's name ("Melanie's friend"): the question asks about someone else, whom either
#: speaker may tell of
_RELATION = r"(?:friends?|mom|mother|dad|father|parents?|kids?|children|son|daughter|husband|wife|partner|" \
            r"brother|sister|family|grandma|grandmother|grandpa|grandfather|boss|colleagues?|neighbou?rs?)"


def asked_speaker(question: str, speakers: Sequence[str]) -> str | None:
    """The one speaker ``question`` asks about: it names exactly one of them, and not as the owner of another
    person ("Melanie's friend"); None otherwise."""
    named = [s for s in speakers if name_pattern(s).search(question)]
    if len(named) != 1:
        return None
    if re.search(re.escape(named[0]) + r"['’]s\s+(?:\w+\s+)?" + _RELATION + r"\b", question, re.I):
        return None
    return named[0]


#: an auxiliary right before the subject of a question ("What advice does Gina give to Jon?")
_AUX = r"\b(?:do|does|did|has|have|had|is|was|were|are|will|would|can|could)\s+"


def subject_speaker(question: str, speakers: Sequence[str]) -> str | None:
    """The speaker a question naming both speakers asks about: the one right after its auxiliary verb ("does
    Gina give to Jon" asks about Gina); None when no speaker stands there."""
    named = [s for s in speakers if name_pattern(s).search(question)]
    if len(named) < 2:
        return None
    m = re.search(_AUX + "(" + "|".join(re.escape(s) for s in named) + r")(?![\w'’])(\s+(?:and|&)\s)?", question,
                  re.I)
    if m is None or m.group(2):  # "do Ana and Ben share": both are the subject
        return None
    return next(s for s in named if m.group(1).lower() == s.lower())


def own_evidence(b: Builder, evidence: list[str], question: str, answer: str, text_of: dict[str, str],
                 speaker_of: dict[str, str], speakers: list[str]) -> list[str]:
    """``evidence`` with support from the speaker the question asks about only: a marked turn of the other
    speaker (often the question that prompted the answer — "For walking or running?" — or their own story
    told back) is replaced by the asked speaker's turn right before or after it in the same session when that
    turn is no question and carries the answer, and dropped otherwise (counted). Questions that name no
    speaker or a speaker's relation keep their evidence; one that names both keeps it unless none of it is
    the subject's own (:func:`subject_speaker`): then nothing is left and the question is dropped."""
    who = asked_speaker(question, speakers)
    if who is None:
        # both named: when not one marked turn is the subject's own ("What advice does Gina give to Jon?" marked
        # with Jon's advice to Gina), the benchmark swapped the roles and no reference can rest on it
        subj = subject_speaker(question, speakers)
        return [] if subj is not None and all(speaker_of[e] != subj for e in evidence) else evidence
    if all(speaker_of[e] == who for e in evidence):
        return evidence
    out: list[str] = []
    for e in evidence:
        if speaker_of[e] == who:
            if e not in out:
                out.append(e)
            continue
        b.warnings["evidence_other_speaker"] += 1
        m = _DIA.match(e)
        for nid in ((f"D{m.group(1)}:{int(m.group(2)) + d}" for d in (1, -1)) if m else ()):
            if (nid in text_of and speaker_of.get(nid) == who and nid not in out
                    and not asks(text_of[nid]) and states(text_of[nid], answer, speakers, question)):
                out.append(nid)
                b.warnings["evidence_speaker_repaired"] += 1
    return out


def asks(text: str) -> bool:
    """Whether a turn is a question (its last sentence, image caption aside, ends with "?")."""
    return _IMAGE.sub("", text).rstrip().endswith("?")


#: a question asking for a count
COUNT = re.compile(r"(?i)\s*how (many|often)\b")
#: a question for the time between two things ("How long did it take …"), which several marked turns answer together
SPAN = re.compile(r"(?i)\s*how long\b")


#: the most words of one item of a list answer ("Her mentors, family, and friends"; "beach, mountains, forest")
LIST_ITEM_WORDS = 3


def carriers(answer: str, question: str, entity: str, memories: list[Memory], speakers: list[str],
             evidence: Sequence[str] = ()) -> tuple[str, ...]:
    """Turns of ``entity`` that write an item of a list answer ("Poetry reading, conference") as whole words and
    share a key term of the question besides it ("I'm going to a transgender conference"): LoCoMo's evidence ids
    for list answers are often incomplete (or mistyped), and such a turn answers its part as well as a marked
    one. Single-item answers add nothing here (their marked turns are the evidence), and neither does an answer
    one marked turn writes whole ("a safe and inviting place for people to grow" is one phrase of one turn, not
    the items "a safe" and "inviting place …": a turn about "a safe place" to read poetry answers nothing of it),
    nor one with a part longer than a list item ("visiting an LGBTQ center and wanting to capture unity and
    strength" is a sentence: its last word is no item, and a turn on a horse painting's "grace and strength"
    answers nothing of it)."""
    items = [i.strip() for i in re.split(r",|\band\b|;", answer) if i.strip()]
    marked = set(evidence)
    if (len(items) < 2 or any(len(i.split()) > LIST_ITEM_WORDS for i in items)
            or _written_whole(answer, [m.text for m in memories if m.id in marked])):
        return ()
    out: list[str] = []
    for it in items:
        own = key_terms(it, speakers)
        rest = key_terms(question, speakers) - own
        if not own or not rest:
            continue
        for m in memories:
            if (m.metadata.get("speaker") == entity and m.id not in out and mentions_word([m.text], it)
                    and shared_terms(m.text, rest) >= 1):
                out.append(m.id)
    return tuple(out)


_WORDS = re.compile(r"[a-z0-9']+")


def _written_whole(answer: str, texts: list[str]) -> bool:
    """Whether one of ``texts`` writes the answer's words in its order, as one run (list separators — commas,
    "and", semicolons — aside)."""
    def words(text: str) -> str:
        return " ".join(w for w in _WORDS.findall(text.lower()) if w != "and")

    want = words(answer)
    return bool(want) and any(f" {want} " in f" {words(t)} " for t in texts)



def _swap_target(question: str, entity: str, attribute: str, speakers: list[str], said_by: dict[str, list[str]],
                 pronouns: dict[str, str | None], answer: str, keys: set[tuple[str, str]]) -> tuple[str, ...]:
    """The other speaker, when asking them the same question is a misattribution: the question names one
    speaker only, the state has no answer for them and the benchmark does not ask it of them (then it is
    that question's seed), nothing of theirs (observations, events, their own turns) supports it, and it can
    be worded about them."""
    if entity not in speakers or len(speakers) != 2 or sum(bool(name_pattern(s).search(question))
                                                           for s in speakers) != 1:
        return ()
    other = next(s for s in speakers if s != entity)
    if (other, attribute) in keys:
        return ()
    if supports(question, said_by.get(other, ()), speakers, (answer,)):
        return ()
    if reword_about(question, entity, other, pronouns.get(entity), pronouns.get(other), strict=True) is None:
        return ()
    return (other,)


def _session_number(key: str) -> int:
    """The session number in a per-session key ("session_3_observation" -> 3), for ordering them."""
    m = re.search(r"(\d+)", key)
    return int(m.group(1)) if m else 0


def _observations(b: Builder, raw: Any, known: set[str], ts_of: dict[str, str], speakers: list[str]) -> list[Fact]:
    """LoCoMo's per-session observations as facts of the speaker they describe, evidenced by their turns."""
    out: list[Fact] = []
    if not isinstance(raw, dict):
        return out
    for key in sorted(raw, key=_session_number):
        by_speaker = raw[key]
        if not isinstance(by_speaker, dict):
            b.warnings["observation_malformed"] += 1
            continue
        for speaker, items in by_speaker.items():
            if speaker not in speakers or not isinstance(items, list):
                b.warnings["observation_malformed"] += 1
                continue
            for item in items:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and item[0].strip()):
                    b.warnings["observation_malformed"] += 1
                    continue
                ids = clean_evidence(item[1], known, b.warnings)
                if not ids:
                    b.warnings["observation_without_turn"] += 1
                    continue
                out.append(Fact(speaker, f"observation {len(out) + 1}", item[0].strip(), tuple(ids),
                                value_type="observation", valid_from=max(ts_of[i] for i in ids)))
    return out


def _events(b: Builder, raw: Any, conv: dict[str, Any], speakers: list[str]) -> list[Fact]:
    """LoCoMo's event summaries as facts of their speaker (no turn evidences them: they have no evidence)."""
    out: list[Fact] = []
    if not isinstance(raw, dict):
        return out
    for key in sorted(raw, key=_session_number):
        sess = raw[key]
        if not isinstance(sess, dict):
            b.warnings["event_malformed"] += 1
            continue
        m = re.search(r"(\d+)", key)
        when = parse_date(conv.get(f"session_{m.group(1)}_date_time")) if m else None
        for speaker in speakers:
            for text in sess.get(speaker) or []:
                if not isinstance(text, str) or not text.strip():
                    b.warnings["event_malformed"] += 1
                    continue
                out.append(Fact(speaker, f"event {len(out) + 1}", text.strip(), (), value_type="event",
                                valid_from=when.isoformat() if when else None))
    return out
