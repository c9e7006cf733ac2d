"""A plain seed suite for the planted-defect tests: a world in which the clean embedded backend (BM25) is right.

Six checkpoints, one attribute each, five people per checkpoint with one memory each, worded like the questions
("Lena's employer is Brellix Systems." / "Who is Lena's employer these days?"); no history, no distractors. In
it BM25 ranks the named person's memory first, so the clean builds pass every seed and the planted defects are
what is left to find, and:

* the name carries almost all of a memory's score (the attribute word is in every memory of its checkpoint),
  so a relevance threshold separates a question about a stored person from the same question about a person
  nobody mentioned;
* the oldest memory of each checkpoint is the evidence of one seed in five (a capacity eviction shows);
* no two seeds of a checkpoint ask in the same shape (template, form, context sentence), nor in a shape one
  paraphrase step of another reaches, so a cache that confuses people is exposed by entity swaps only.

Unsupported targets are absent *people* only. An absent-attribute question about a stored person ("What is
Lena's hobby now?") shares the person's name with the decoy; no lexical score threshold tells the two apart, so
such a suite would make every threshold look too low.

It ships with the package because ``ufuzz bench --planted`` (:mod:`ufuzz.reports.planted`) fuzzes the planted
defects on it; ``python -m tests.support.planted_world`` rewrites the tests' committed copy,
``tests/fixtures/planted/plain_world.jsonl``.
"""

from __future__ import annotations

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
from ufuzz.seeds.wording import CONTEXTS, FORMS, fields_of, realize, template_ids

PEOPLE = 5  # per checkpoint

#: attribute -> (the noun its memories and seed questions share, the seed questions' template, value pool)
ATTRIBUTES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "employer": ("employer", "employer", pools.COMPANIES),
    "job": ("job", "job", pools.OCCUPATIONS),
    "partner": ("partner", "partner", pools.PERSON_NAMES[-30:]),
    "hobby": ("hobby", "hobby", pools.HOBBIES),
    "favourite_food": ("favourite food", "fav", pools.FOODS),
    "city": ("home", "home", pools.CITIES),
}
VALUE_TYPES = {"employer": "company", "job": "occupation", "partner": "person_name", "hobby": "hobby",
               "favourite_food": "food", "city": "city"}


def _checkpoint(n: int, attribute: str, names: list[str], values: list[str]) -> Checkpoint:
    noun = ATTRIBUTES[attribute][0]
    memories, facts = [], []
    for i, (name, value) in enumerate(zip(names, values, strict=True), start=1):
        mid, ts = f"w{n}-m{i}", f"2024-0{n}-{10 + i}T09:00:00"
        memories.append(Memory(id=mid, text=f"{name}'s {noun} is {value}.", timestamp=ts))
        facts.append(Fact(entity=name, attribute=attribute, value=value, evidence=(mid,), valid=True,
                          value_type=VALUE_TYPES[attribute], valid_from=ts))
    return Checkpoint(id=f"w{n}", memories=tuple(memories), facts=tuple(facts),
                      entities=tuple(Entity(name, "person") for name in names))


def _shape(n: int, j: int, attribute: str) -> tuple[str, str, str]:
    """(template, form, context) of seed ``j`` (0-based) of checkpoint ``n``: no two seeds of a checkpoint ask
    in the same shape, and none in a shape one paraphrase step of another seed reaches (every seed has its
    own context sentence, which reword and change_form keep)."""
    noun_first = [f"{attribute}.{ATTRIBUTES[attribute][1]}"]
    templates = noun_first + [t for t in template_ids(attribute) if t not in noun_first]
    return templates[j % 3], FORMS[(j + j // 3) % 3], CONTEXTS[(3 * n + j) % len(CONTEXTS)]


def plain_world(people: int = PEOPLE) -> SeedSuite:
    suite = SeedSuite(name="planted-plain-world")
    persons = list(pools.PERSON_NAMES[:-30])
    absent = persons[-3:]  # mentioned nowhere in the world
    for n, (attribute, (_, _, pool)) in enumerate(ATTRIBUTES.items(), start=1):
        names = persons[(n - 1) * people:n * people]
        values = list(pool[(n - 1) * people:n * people]) if attribute == "partner" else list(pool[:people])
        fresh = list(pool[-2:])
        cp = _checkpoint(n, attribute, names, values)
        suite.checkpoints[cp.id] = cp
        prov = Provenance.of(cp)
        for j, name in enumerate(names):
            fields = QueryFields(entity=name, attribute=attribute, scope="current", answerable=True)
            template, form, context = _shape(n, j, attribute)
            text = realize(fields, template=template, form=form, context=context, entity_type="person")
            assert fields_of(text, names) == fields, text
            qid = f"w{n}-q{j + 1}"
            desc = MutationDescriptor(replacement_targets={"entity": tuple(x for x in names if x != name)},
                                      absent_targets={"entity": tuple(absent)}, value_pool=tuple(fresh))
            query = Query(id=qid, text=text, fields=fields, context=context, form=form, template=template)
            suite.seeds.append(Seed(id=f"w{n}-s{j + 1}", checkpoint_id=cp.id, query=query, descriptor=desc))
            suite.references[qid] = prov.reference_for(qid, fields)
    return suite
