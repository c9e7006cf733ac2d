"""Synthetic seed suites: personas of chat-memory statements with provenance, templated queries, references.

Each persona is one :class:`Checkpoint` (``p{n}``) of ~25–50 memories (``p{n}-m{k}``, timestamps increasing
over months) written as a user's chat-memory statements about relations (person entities) and pets. About 30%
of the recorded facts have history: an earlier memory with the old value (``valid=False``) and a later one
with the new value. Distractors (chit-chat, entity mentions without facts, mentions of other entities'
values) and near-miss values ("Velmora" / "Velmora Heights", two people at the same company) make retrieval
non-trivial. Queries are realised from :mod:`ufuzz.seeds.wording` templates; references come from
:meth:`Provenance.reference_for` and are checked against the generator's own model.

Everything is drawn from one ``random.Random`` per persona seeded from ``(seed, n)``, so a suite is a pure
function of ``(personas, seed, queries_per_persona)`` — byte-identical on every run and platform.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ufuzz.model import (
    Checkpoint,
    Entity,
    Fact,
    Memory,
    MutationDescriptor,
    Provenance,
    Query,
    QueryFields,
    Seed,
    SeedSuite,
)
from ufuzz.seeds import pools
from ufuzz.seeds.importers.fields import no_new_answer
from ufuzz.seeds.io import write_suite
from ufuzz.seeds.wording import ATTRIBUTES, CONTEXTS, FORMS, attributes_for, fields_of, realize, template_ids

GENERATOR = "ufuzz.seeds.synth.synthesize"
HISTORY_FRACTION = 0.3
CONTEXT_PROBABILITY = 0.4

# Statement phrasings per attribute: {who} = entity mention at sentence start, {who_l} = mid-sentence,
# {v} = value, {a_v} = value with its indefinite article.
# Initial phrasings state what holds ("X has worked as a farrier for years"), not an event ("X trained as a
# farrier years ago"): the update operator rewrites the latest evidence with a new value, and a rewritten event
# reads as a second event beside the first rather than a change (a hand audit found such mutants ambiguous).
STATEMENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "city": {
        "initial": ("{who} lives in {v}.", "{who} has lived in {v} since last spring.",
                    "{who} has been living in {v} for a few years now.",
                    "{who} just signed a lease on a flat in {v}.", "{who} is settled in {v} and loves the place."),
        "update": ("{who} has moved to {v}!", "{who} relocated to {v} for a fresh start.",
                   "Update: {who_l} lives in {v} now.", "{who} packed up everything and moved to {v} last month."),
    },
    "employer": {
        "initial": ("{who} works at {v}.", "{who} has a job with {v}.", "{who} has been with {v} for ages.",
                    "{who} is employed by {v}."),
        "update": ("{who} switched jobs and is now at {v}.", "{who} started a new position at {v}.",
                   "{who} left the old company and joined {v}."),
    },
    "job": {
        "initial": ("{who} works as {a_v}.", "{who} is {a_v}.", "{who} has worked as {a_v} for years.",
                    "{who} makes a living as {a_v}."),
        "update": ("{who} retrained and now works as {a_v}.", "{who} changed careers and is {a_v} these days.",
                   "{who} has a new career as {a_v}."),
    },
    "favourite_food": {
        "initial": ("{who} adores {v}.", "{who}'s favourite food is {v}.", "{who} would eat {v} every single day.",
                    "Nothing makes {who_l} happier than a plate of {v}."),
        "update": ("{who} has gone off the old favourite and now craves {v}.",
                   "These days {who_l} can't get enough of {v}.", "{who} has a new favourite food: {v}."),
    },
    "gym_day": {
        "initial": ("{who} goes to the gym on {v}.", "{who} never misses a gym session on {v}.",
                    "{who} works out on {v}."),
        "update": ("{who} moved the gym sessions to {v}.", "{who} now trains on {v} instead."),
    },
    "hobby": {
        "initial": ("{who} is really into {v}.", "{who} spends most weekends on {v}.",
                    "{who}'s main hobby is {v}."),
        "update": ("{who} gave up the old hobby and has taken up {v} instead.",
                   "{who} dropped the old hobby and is all about {v} now."),
    },
    "partner": {
        "initial": ("{who} is dating {v}.", "{who} has a partner called {v}.",
                    "{who} and {v} have been together for a while."),
        "update": ("{who} broke up and is now seeing {v}.", "{who} has a new partner, {v}."),
    },
    "pet_name": {
        "initial": ("{who} has a pet called {v}.", "{who}'s pet is named {v}.", "{who}'s pet answers to {v}."),
        "update": ("{who} has a new pet now, called {v}.", "{who} rehomed the old pet and adopted one named {v}."),
    },
    "species": {
        "initial": ("My pet {who} is {a_v}.", "{who} is my {v}.", "{who} is {a_v}, in case you wondered."),
        "update": ("{who} turned out to be {a_v} after all.",),
    },
    "vet": {
        "initial": ("{who}'s vet is {v}.", "I take {who_l} to a vet called {v}.",
                    "{v} is the vet who looks after {who_l}."),
        "update": ("We switched {who_l} to a new vet, {v}.", "{who} is now seen by {v} at a different clinic."),
    },
    "feeding_time": {
        "initial": ("{who} gets fed at {v}.", "I feed {who_l} at {v} every day.", "{who}'s dinner is at {v} sharp."),
        "update": ("I moved {who_l}'s feeding to {v}.", "{who} now eats at {v}."),
    },
    "toy": {
        "initial": ("{who} loves the {v}.", "{who}'s favourite toy is the {v}.",
                    "{who} won't stop playing with the {v}."),
        "update": ("{who} has a new favourite toy: the {v}.", "{who} has abandoned the old toy for the {v}."),
    },
}

CHITCHAT: tuple[str, ...] = (
    "I finally finished that thousand-piece jigsaw.", "Feeling a bit tired today, it has been a long week.",
    "I should drink more water.", "The new season of my favourite show starts soon.",
    "I'm thinking about repainting the hallway green.", "Remember that I prefer window seats on trains.",
    "I've been trying to go to bed a little earlier.", "My phone screen cracked again.",
    "I want to learn a few phrases of a new language.", "I keep meaning to sort out the garage.",
    "The weather has been surprisingly mild.", "I bought a new kettle because the old one started leaking.",
)
VALUE_CHATTER: dict[str, tuple[str, ...]] = {
    "city": ("I'm thinking of a weekend trip to {v}.", "There was a documentary about {v} on last night."),
    "food": ("I had {v} for lunch and it was great.", "I tried making {v} at home; it was a disaster."),
    "company": ("I read an article about {v} this morning.",),
    "hobby": ("I might try {v} one day.",),
}
PERSON_CHATTER: tuple[str, ...] = (
    "{who} and I went for a long walk by the river.", "{who} called me for a chat yesterday.",
    "I owe {who_l} a birthday present.", "{who} recommended a great podcast to me.",
    "{who} visited {city} for a conference.", "I had dinner with {who_l} at a place that serves {food}.",
)
PET_CHATTER: tuple[str, ...] = ("{who} knocked a cup off the table again.", "{who} had a bath and hated it.",
                                "{who} slept on my jumper all afternoon.")


def _article(value: str) -> str:
    return ("an " if value[:1].lower() in "aeiou" else "a ") + value


@dataclass
class _Event:
    pos: float
    kind: str  # fact | update | chatter
    entity: str | None = None
    attribute: str | None = None
    value: str | None = None
    text_template: str = ""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class _Persona:
    n: int
    rng: random.Random
    entities: list[Entity] = field(default_factory=list)
    relations: dict[str, str] = field(default_factory=dict)
    values: dict[tuple[str, str], str] = field(default_factory=dict)  # current value
    old_values: dict[tuple[str, str], str] = field(default_factory=dict)  # superseded value (history)
    used: set[str] = field(default_factory=set)

    def fresh(self, value_type: str) -> str:
        pool = [v for v in pools.POOLS[value_type] if v not in self.used]
        v = self.rng.choice(pool)
        self.used.add(v)
        return v


def _entity_type(p: _Persona, name: str) -> str:
    return next(e.type for e in p.entities if e.name == name)


def _build_persona(n: int, seed: int) -> _Persona:
    rng = random.Random(seed * 1_000_003 + n)
    p = _Persona(n=n, rng=rng)
    n_persons, n_pets = rng.randint(3, 5), rng.randint(1, 2)
    persons = rng.sample(pools.PERSON_NAMES, n_persons)
    pets = rng.sample(pools.PET_NAMES, n_pets)
    p.used.update(persons + pets)
    for name, rel in zip(persons, rng.sample(pools.RELATIONS["person"], n_persons), strict=True):
        p.entities.append(Entity(name, "person"))
        p.relations[name] = rel
    p.entities.extend(Entity(name, "pet") for name in pets)

    person_attrs = attributes_for("person")
    plan: list[tuple[str, str]] = []
    for i, name in enumerate(persons):
        forced = ["city", "employer"] if i < 2 else []
        k = rng.randint(3, 5)
        rest = rng.sample([a for a in person_attrs if a not in forced], k - len(forced))
        plan.extend((name, a) for a in [a for a in person_attrs if a in forced or a in rest])
    for name in pets:
        extra = rng.sample(["vet", "feeding_time", "toy", "favourite_food"], rng.randint(1, 3))
        plan.extend((name, a) for a in attributes_for("pet") if a == "species" or a in extra)

    special: set[tuple[str, str]] = set()
    for ent, attr in plan:
        vtype = ATTRIBUTES[attr].value_type
        if ent == persons[1] and attr == "city":  # near-miss city of the first person's
            v = pools.near_miss("city", p.values[(persons[0], "city")], rng)
            assert v is not None and v not in p.used
            p.used.add(v)
            special |= {(ent, attr), (persons[0], attr)}
        elif ent == persons[1] and attr == "employer":  # same employer as the first person
            v = p.values[(persons[0], "employer")]
            special |= {(ent, attr), (persons[0], attr)}
        else:
            prior = [val for (e2, a2), val in p.values.items() if a2 == attr and e2 != ent]
            v = None
            if prior and vtype in ("food", "toy", "clock_time", "weekday") and rng.random() < 0.35:
                v = pools.near_miss(vtype, rng.choice(prior), rng)
                if v in p.used:
                    v = None
                else:
                    special.add((ent, attr))
            if v is None:
                v = p.fresh(vtype)
            p.used.add(v)
        p.values[(ent, attr)] = v

    eligible = [k for k in plan if k[1] != "species" and k not in special]
    n_hist = min(len(eligible), round(HISTORY_FRACTION * len(plan)))
    for key in rng.sample(eligible, n_hist):
        old = p.fresh(ATTRIBUTES[key[1]].value_type)
        while no_new_answer(old, p.values[key], key[1].replace("_", " ")):
            old = p.fresh(ATTRIBUTES[key[1]].value_type)  # a history the current value only rewords is none
        p.old_values[key] = old
    return p


def _events(p: _Persona) -> list[_Event]:
    rng = p.rng
    events: list[_Event] = []
    species_pos: dict[str, float] = {}
    for e in p.entities:
        if e.type == "pet":
            species_pos[e.name] = rng.uniform(0.0, 0.25)
    for (ent, attr), value in p.values.items():
        phr = STATEMENTS[attr]
        if attr == "species":
            pos = species_pos[ent]
        elif ent in species_pos:
            pos = rng.uniform(species_pos[ent] + 0.01, 0.55)
        else:
            pos = rng.uniform(0.0, 0.55)
        if (ent, attr) in p.old_values:
            events.append(_Event(pos, "fact", ent, attr, p.old_values[(ent, attr)], rng.choice(phr["initial"])))
            events.append(_Event(rng.uniform(max(pos + 0.05, 0.45), 1.0), "update", ent, attr, value,
                                 rng.choice(phr["update"])))
        else:
            events.append(_Event(pos, "fact", ent, attr, value, rng.choice(phr["initial"])))

    n_fact_memories = len(events)
    n_chatter = max(rng.randint(5, 9), 25 - n_fact_memories)
    persons = [e.name for e in p.entities if e.type == "person"]
    pets = [e.name for e in p.entities if e.type == "pet"]
    cities = [v for (_e, a), v in p.values.items() if a == "city"]
    for _ in range(n_chatter):
        roll = rng.random()
        if roll < 0.35:
            events.append(_Event(rng.uniform(0, 1), "chatter", text_template=rng.choice(CHITCHAT)))
        elif roll < 0.55:
            vtype = rng.choice(sorted(VALUE_CHATTER))
            events.append(_Event(rng.uniform(0, 1), "chatter", text_template=rng.choice(VALUE_CHATTER[vtype]),
                                 extra={"v": p.fresh(vtype)}))
        elif roll < 0.85 or not pets:
            who = rng.choice(persons)
            tmpl = rng.choice(PERSON_CHATTER)
            other_cities = [c for c in cities if c != p.values.get((who, "city"))]
            extra = {"city": rng.choice(other_cities) if other_cities else p.fresh("city"),
                     "food": p.fresh("food")} if ("{city}" in tmpl or "{food}" in tmpl) else {}
            events.append(_Event(rng.uniform(0, 1), "chatter", entity=who, text_template=tmpl, extra=extra))
        else:
            who = rng.choice(pets)
            events.append(_Event(rng.uniform(species_pos[who] + 0.01, 1), "chatter", entity=who,
                                 text_template=rng.choice(PET_CHATTER)))
    events.sort(key=lambda ev: ev.pos)
    return events


def _mention(p: _Persona, name: str, introduced: set[str]) -> tuple[str, str]:
    if name in introduced or _entity_type(p, name) == "pet":
        introduced.add(name)
        return name, name
    introduced.add(name)
    rel = p.relations[name]
    return f"My {rel} {name}", f"my {rel} {name}"


def _checkpoint(p: _Persona) -> Checkpoint:
    rng = p.rng
    events = _events(p)
    t = datetime(2023, 1, 2, 9, 0) + timedelta(days=rng.randint(0, 240), minutes=rng.randint(0, 600))
    introduced: set[str] = set()
    memories: list[Memory] = []
    facts: list[Fact] = []
    for k, ev in enumerate(events, start=1):
        t += timedelta(days=rng.randint(2, 9), hours=rng.randint(0, 9), minutes=rng.randint(0, 59))
        mid, ts = f"p{p.n}-m{k}", t.isoformat(timespec="seconds")
        fmt: dict[str, str] = dict(ev.extra)
        if ev.entity is not None:
            fmt["who"], fmt["who_l"] = _mention(p, ev.entity, introduced)
        if ev.value is not None:
            fmt["v"], fmt["a_v"] = ev.value, _article(ev.value)
        text = ev.text_template.format(**fmt)
        memories.append(Memory(id=mid, text=text[0].upper() + text[1:], timestamp=ts))
        if ev.kind in ("fact", "update"):
            assert ev.entity is not None and ev.attribute is not None and ev.value is not None
            valid = ev.kind == "update" or (ev.entity, ev.attribute) not in p.old_values
            facts.append(Fact(entity=ev.entity, attribute=ev.attribute, value=ev.value, evidence=(mid,),
                              valid=valid, value_type=ATTRIBUTES[ev.attribute].value_type, valid_from=ts))
    return Checkpoint(id=f"p{p.n}", memories=tuple(memories), facts=tuple(facts), entities=tuple(p.entities))


def _mentioned(needle: str, cp: Checkpoint) -> bool:
    n = needle.lower()
    return (any(n in m.text.lower() for m in cp.memories) or any(n == f.value.lower() for f in cp.facts)
            or any(n == e.name.lower() for e in cp.entities))


def _descriptor(rng: random.Random, cp: Checkpoint, prov: Provenance, fields: QueryFields) -> MutationDescriptor:
    etype = prov.entity_type(fields.entity)
    assert etype is not None

    def supported(f: QueryFields) -> bool:
        return not prov.reference_for("_", f).abstain

    repl: dict[str, tuple[str, ...]] = {}
    ents = tuple(e.name for e in cp.entities if e.type == etype and e.name != fields.entity
                 and supported(replace(fields, entity=e.name, answerable=True)))
    attrs = tuple(a for a in prov.attributes_of(fields.entity) if a != fields.attribute
                  and supported(replace(fields, attribute=a, answerable=True)))
    if ents:
        repl["entity"] = ents
    if attrs:
        repl["attribute"] = attrs
    if prov.previous(fields.entity, fields.attribute) is not None:
        repl["scope"] = ("current",) if fields.scope == "previous" else ("previous",)

    absent: dict[str, tuple[str, ...]] = {}
    free_names = [n for n in pools.ENTITY_NAMES[etype] if not _mentioned(n, cp)]
    absent["entity"] = tuple(rng.sample(free_names, min(len(free_names), rng.randint(3, 5))))
    lacking = tuple(a for a in attributes_for(etype)
                    if a != fields.attribute and a not in prov.attributes_of(fields.entity))
    if lacking:
        absent["attribute"] = lacking
    vtype = ATTRIBUTES[fields.attribute].value_type
    fresh = [v for v in pools.POOLS[vtype] if not _mentioned(v, cp) and v not in absent["entity"]]
    return MutationDescriptor(replacement_targets=repl, absent_targets=absent, memory_ops=None,
                              value_pool=tuple(rng.sample(fresh, 5)))


def _seeds(p: _Persona, cp: Checkpoint, queries: int) -> list[tuple[Seed, Any]]:
    rng = p.rng
    prov = Provenance.of(cp)
    answerable = sorted(p.values)
    history = sorted(p.old_values)
    unanswerable = sorted((e.name, a) for e in p.entities for a in attributes_for(e.type)
                          if (e.name, a) not in p.values)
    n_unans = min(len(unanswerable), 1 if queries < 6 else rng.randint(1, 2))
    n_prev = min(len(history), max(1, queries // 4)) if queries >= 3 else 0
    n_any = 1 if queries >= 6 else 0
    picks: list[tuple[tuple[str, str], str, bool]] = []
    picks += [(k, "previous", True) for k in rng.sample(history, n_prev)]
    picks += [(k, "current", False) for k in rng.sample(unanswerable, n_unans)]
    no_history = [k for k in answerable if k not in p.old_values]
    any_keys = rng.sample(no_history, min(n_any, len(no_history)))
    picks += [(k, "any", True) for k in any_keys]
    taken = {k for k, _, _ in picks}
    rest = [k for k in answerable if k not in taken]
    n_cur = max(0, min(queries - len(picks), len(rest)))
    picks += [(k, "current", True) for k in rng.sample(rest, n_cur)]
    rng.shuffle(picks)

    names = [e.name for e in cp.entities]
    out = []
    for j, ((ent, attr), scope, ok) in enumerate(picks, start=1):
        fields = QueryFields(entity=ent, attribute=attr, scope=scope, answerable=ok)
        template, form = rng.choice(template_ids(attr)), rng.choice(FORMS)
        context = rng.choice(CONTEXTS) if rng.random() < CONTEXT_PROBABILITY else ""
        etype = _entity_type(p, ent)
        text = realize(fields, template=template, form=form, context=context, entity_type=etype)
        if fields_of(text, names) != replace(fields, answerable=True):
            raise RuntimeError(f"wording does not round-trip for {fields}: {text!r}")
        qid = f"p{p.n}-q{j}"
        ref = prov.reference_for(qid, fields)
        expected = (None if not ok else p.old_values[(ent, attr)] if scope == "previous" else p.values[(ent, attr)])
        if ref.answer != expected or ref.abstain != (expected is None):
            raise RuntimeError(f"provenance disagrees with the generator for {qid}: {ref} vs {expected!r}")
        desc = _descriptor(rng, cp, prov, fields)
        query = Query(id=qid, text=text, fields=fields, context=context, form=form, template=template)
        out.append((Seed(id=f"p{p.n}-s{j}", checkpoint_id=cp.id, query=query, descriptor=desc), ref))
    return out


def synthesize(personas: int, seed: int, queries_per_persona: int = 8) -> SeedSuite:
    """A synthetic suite of ``personas`` checkpoints with up to ``queries_per_persona`` seeds each."""
    if personas < 1:
        raise ValueError(f"personas must be at least 1, got {personas}")
    if queries_per_persona < 1:
        raise ValueError(f"queries_per_persona must be at least 1, got {queries_per_persona}")
    suite = SeedSuite(name=f"synthetic-p{personas}-s{seed}")
    for n in range(1, personas + 1):
        persona = _build_persona(n, seed)
        cp = _checkpoint(persona)
        suite.checkpoints[cp.id] = cp
        for s, ref in _seeds(persona, cp, queries_per_persona):
            suite.seeds.append(s)
            suite.references[ref.query_id] = ref
    return suite


def header(personas: int, seed: int, queries_per_persona: int = 8) -> dict[str, Any]:
    """Header fields recording how a synthetic suite was generated."""
    return {"generator": GENERATOR,
            "generator_args": {"personas": personas, "seed": seed, "queries_per_persona": queries_per_persona}}


def write_synthetic(path: str | Path, personas: int, seed: int, queries_per_persona: int = 8) -> Path:
    suite = synthesize(personas, seed, queries_per_persona)
    return write_suite(suite, path, header=header(personas, seed, queries_per_persona))


DEFAULT_ARGS = {"personas": 12, "seed": 7}

if __name__ == "__main__":  # python -m ufuzz.seeds.synth [path]  — regenerates the shipped default suite
    import sys

    print(write_synthetic(sys.argv[1] if len(sys.argv) > 1 else "seeds/default.jsonl", **DEFAULT_ARGS))
