"""Query wording: every template round-trips through extraction; attributes never bleed into each other."""

from __future__ import annotations

import itertools
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import SCOPES, QueryFields
from ufuzz.seeds import pools
from ufuzz.seeds.wording import (
    ATTRIBUTES,
    CONTEXTS,
    FORMS,
    SCOPE_WORDS,
    AttributeSpec,
    Mentions,
    attributes_for,
    extract,
    fields_of,
    realize,
    split_context,
    template_ids,
    template_text,
)

ALL_NAMES = pools.PERSON_NAMES + pools.PET_NAMES
ALL_VALUES = tuple(v for vs in pools.POOLS.values() for v in vs)
REQUIRED = {"person": {"city", "employer", "job", "favourite_food", "gym_day", "hobby", "partner", "pet_name"},
            "pet": {"species", "vet", "feeding_time", "toy"}}


def _entity_for(spec: AttributeSpec) -> str:
    return pools.ENTITY_NAMES[spec.entity_types[0]][0]


def test_required_attributes_and_types():
    for etype, attrs in REQUIRED.items():
        assert attrs <= set(attributes_for(etype))
    for name, spec in ATTRIBUTES.items():
        assert spec.name == name
        assert spec.value_type in pools.POOLS, name
        assert set(spec.entity_types) <= set(pools.ENTITY_NAMES)
        assert spec.phrases


def test_template_shape_matches_api():
    for attr, spec in ATTRIBUTES.items():
        ids = template_ids(attr)
        assert len(ids) >= 3, attr
        assert ids == list(spec.templates) == list(spec.scoped)
        for tid in ids:
            assert set(spec.templates[tid]) == set(FORMS)
            assert set(spec.scoped[tid]) == set(SCOPES)
            for form in FORMS:
                assert spec.templates[tid][form] == template_text(attr, tid, form)
                for scope in SCOPES:
                    fmt = spec.scoped[tid][scope][form]
                    assert "{entity}" in fmt
                    used = {f for _, f, _, _ in string.Formatter().parse(fmt) if f is not None}
                    assert used <= {"entity", "scope"}, (tid, scope, form)


def test_templates_are_genuinely_different_wordings():
    for attr in ATTRIBUTES:
        for scope, form in itertools.product(SCOPES, FORMS):
            cores = [template_text(attr, t, form, scope).format(entity="X", scope="") for t in template_ids(attr)]
            # differ in more than the scope phrase: the wording without the scope slot is distinct
            assert len(set(cores)) == len(cores), (attr, scope, form, cores)
            words = [set(re.findall(r"\w+", c.lower())) for c in cores]
            for a, b in itertools.combinations(words, 2):
                assert a ^ b, (attr, scope, form)
        # the forms differ from each other too
        for t in template_ids(attr):
            assert len({template_text(attr, t, f) for f in FORMS}) == 3


def test_exhaustive_round_trip_all_templates_forms_scopes_contexts():
    n = 0
    for attr, spec in ATTRIBUTES.items():
        ent = _entity_for(spec)
        for tid, form, scope, ctx in itertools.product(template_ids(attr), FORMS, SCOPES, ("",) + CONTEXTS):
            f = QueryFields(entity=ent, attribute=attr, scope=scope)
            text = realize(f, template=tid, form=form, context=ctx)
            assert fields_of(text, ALL_NAMES) == f, text
            got_ctx, core = split_context(text)
            assert got_ctx == ctx
            m = extract(core, ALL_NAMES)
            assert (m.entities, m.attributes, m.scopes) == ({ent}, {attr}, {scope}), text
            n += 1
    assert n == sum(len(template_ids(a)) for a in ATTRIBUTES) * 3 * 3 * (len(CONTEXTS) + 1)


@st.composite
def _realisations(draw):
    attr = draw(st.sampled_from(sorted(ATTRIBUTES)))
    spec = ATTRIBUTES[attr]
    etype = draw(st.sampled_from(spec.entity_types))
    entity = draw(st.sampled_from(pools.ENTITY_NAMES[etype]))
    return (QueryFields(entity=entity, attribute=attr, scope=draw(st.sampled_from(SCOPES))), etype,
            draw(st.sampled_from(template_ids(attr))), draw(st.sampled_from(FORMS)),
            draw(st.sampled_from(("",) + CONTEXTS)))


@settings(max_examples=400, deadline=None)
@given(_realisations())
def test_property_round_trip_with_pool_names(case):
    fields, etype, tid, form, ctx = case
    text = realize(fields, template=tid, form=form, context=ctx, entity_type=etype)
    assert text == realize(fields, template=tid, form=form, context=ctx)  # deterministic
    assert fields_of(text, ALL_NAMES) == fields
    got_ctx, core = split_context(text)
    assert got_ctx == ctx and (text == core if not ctx else text == f"{ctx} {core}")
    m = extract(core, ALL_NAMES, ALL_VALUES)
    assert m.entities == {fields.entity}
    assert m.attributes == {fields.attribute}
    assert m.scopes == {fields.scope}
    assert m.values == frozenset()


def test_no_template_of_one_attribute_matches_another_attributes_phrases():
    for a in ATTRIBUTES:
        for tid, scope, form in itertools.product(template_ids(a), SCOPES, FORMS):
            text = template_text(a, tid, form, scope).format(entity="Xq", scope="")
            for b, other in ATTRIBUTES.items():
                if b == a:
                    continue
                hits = [p for p in other.phrases if re.search(p, text, re.IGNORECASE)]
                assert not hits, (a, tid, b, hits, text)


def test_contexts_are_neutral_sentences():
    assert len(CONTEXTS) >= 8
    for ctx in CONTEXTS:
        assert ctx.endswith(".")
        assert extract(ctx, ALL_NAMES, ALL_VALUES) == Mentions(frozenset(), frozenset(), frozenset(), frozenset())
        assert not re.search(r"\b(today|tomorrow|yesterday|week|month|year|if|unless|when)\b", ctx, re.I), ctx


def test_scope_words_cover_scopes_and_are_exclusive():
    assert set(SCOPE_WORDS) == set(SCOPES)
    assert SCOPE_WORDS["current"] and SCOPE_WORDS["previous"]
    # each rendered scope marks exactly its own scope
    for attr, spec in ATTRIBUTES.items():
        for tid, scope in itertools.product(template_ids(attr), SCOPES):
            text = realize(QueryFields(_entity_for(spec), attr, scope), template=tid, form="question")
            assert extract(text, ALL_NAMES).scopes == {scope}


def test_previous_templates_read_in_the_past():
    text = realize(QueryFields("Lena", "city", "previous"), template="city.live", form="question")
    assert text == "Where did Lena use to live?"
    for attr in ATTRIBUTES:
        for tid in template_ids(attr):
            cur = template_text(attr, tid, "question", "current")
            prev = template_text(attr, tid, "question", "previous")
            assert cur != prev and re.search(r"\b(did|was|were|used?|treated|employed)\b", prev), prev


def test_realize_errors():
    f = QueryFields("Lena", "city")
    with pytest.raises(KeyError):
        realize(f, template="city.nope", form="question")
    with pytest.raises(KeyError):
        realize(f, template="job.job", form="question")  # template of another attribute
    with pytest.raises(KeyError):
        realize(f, template="city.live", form="shout")
    with pytest.raises(KeyError):
        realize(QueryFields("Lena", "salary"), template="city.live", form="question")
    with pytest.raises(ValueError, match="does not apply"):
        realize(QueryFields("Pim", "employer"), template="employer.employer", form="question", entity_type="pet")


def test_extract_entities_case_possessive_and_whole_words():
    m = extract("What is Lena's job now?", ["Lena", "Tarik"])
    assert m.entities == {"Lena"} and m.attributes == {"job"} and m.scopes == {"current"}
    assert extract("What is lena's job?", ["Lena"]).entities == frozenset()  # names are case-sensitive
    assert extract("What is Lenara's job?", ["Lena"]).entities == frozenset()
    assert extract("Tell me about Lena and Tarik.", ["Lena", "Tarik"]).entities == {"Lena", "Tarik"}
    # a name that contains an attribute phrase never reads as that attribute
    assert extract("Where does Home live?", ["Home"]).attributes == {"city"}


def test_extract_values_longest_match():
    known = ["Velmora", "Velmora Heights", "karrow stew"]
    assert extract("She moved to Velmora Heights.", [], known).values == {"Velmora Heights"}
    assert extract("She moved to Velmora.", [], known).values == {"Velmora"}
    assert extract("Karrow Stew again!", [], known).values == {"karrow stew"}
    assert extract("Velmoran food", [], known).values == frozenset()


def test_scopes_only_explicit_markers():
    assert extract("Where does Lena live?", ["Lena"]).scopes == frozenset()
    assert extract("Where did Lena live before?", ["Lena"]).scopes == {"previous"}
    assert extract("I'd like to know who Lena works for.", ["Lena"]).scopes == frozenset()  # 'know' is not 'now'


def test_fields_of_ambiguous_or_absent():
    names = ["Lena", "Tarik"]
    assert fields_of("Where does Lena live?", names) == QueryFields("Lena", "city", "current")
    assert fields_of("Where does Lena live?", names, default_scope="any") == QueryFields("Lena", "city", "any")
    assert fields_of("Where do Lena and Tarik live?", names) is None
    assert fields_of("Where does Ugo live?", names) is None
    assert fields_of("Tell me about Lena.", names) is None
    assert fields_of("Where does Lena live and what is Lena's job?", names) is None
    assert fields_of("Where does Lena live now, and before?", names) is None
    with pytest.raises(ValueError):
        fields_of("Where does Lena live?", names, default_scope="someday")


def test_split_context():
    assert split_context("Quick question. Where does Lena live?") == ("Quick question.", "Where does Lena live?")
    assert split_context("Where does Lena live?") == ("", "Where does Lena live?")
    assert split_context("Quick question.") == ("", "Quick question.")
    assert split_context("Something else. Where does Lena live?") == ("", "Something else. Where does Lena live?")


# -- free-text rewrites (imported questions) --------------------------------------------------------------------
from hypothesis import given as _given  # noqa: E402
from hypothesis import settings as _settings  # noqa: E402
from hypothesis import strategies as _st  # noqa: E402

from ufuzz.seeds.wording import FREE_REWRITES, free_rewrites, split_contexts  # noqa: E402

_OPENINGS = ["When did", "When is", "Where did", "Where is", "Who did", "Who is", "Why did", "Why does",
             "How many", "How often does", "How long did", "How did", "What kind of", "What type of",
             "Which song", "What did", "What is", "What's", "What time does", "How much money did", "Would",
             "How old was", "What books has"]
_REST = _st.lists(_st.sampled_from(["Caroline", "go", "the", "park", "paint", "dogs", "with", "her", "kids",
                                    "in", "May", "2023", "have", "for", "from", "to"]), min_size=1, max_size=7)


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9']+", text)


#: the words the table's rewrites may add or remove (the wh-phrase), nothing else
_TABLE_WORDS = {w.lower() for _, pat, rep in FREE_REWRITES for w in _words(pat + " " + rep)}


@_settings(max_examples=200, deadline=None)
@_given(_st.sampled_from(_OPENINGS), _REST)
def test_free_rewrites_change_only_the_wh_phrase(opening, rest):
    q = f"{opening} {' '.join(rest)}?"
    for new in free_rewrites(q):
        assert new != q and new.endswith("?")
        a, b = _words(q), _words(new)
        changed = {w.lower() for w in a if a.count(w) != b.count(w)} | {w.lower() for w in b if a.count(w) != b.count(w)}
        assert changed <= _TABLE_WORDS, changed
        assert [w for w in b if w.lower() not in _TABLE_WORDS] == [w for w in a if w.lower() not in _TABLE_WORDS]


def test_free_rewrites_per_question_type_and_their_inverses():
    cases = {
        "When did Caroline go to the park?": "At what point in time did Caroline go to the park?",
        "Where did Caroline move from?": "What place did Caroline move from?",
        "Where has Melanie camped?": "In what place has Melanie camped?",
        "Who is Caroline a fan of?": "Which person is Caroline a fan of?",
        "Why did Jon quit?": "For what reason did Jon quit?",
        "How many kids does Mel have?": "What number of kids does Mel have?",
        "How often does Mel swim?": "How frequently does Mel swim?",
        "Would Caroline move back?": "Do you think Caroline would move back?",
        "What kind of dog does Mel have?": "What type of dog does Mel have?",
        "What book is Jon reading?": "Which book is Jon reading?",
    }
    for q, expected in cases.items():
        assert expected in free_rewrites(q), (q, free_rewrites(q))
        assert q in free_rewrites(expected), (expected, free_rewrites(expected))  # and back
    assert free_rewrites("How long ago was Caroline's birthday?") == []  # "for how long ago" is not English
    assert free_rewrites("Any tips for my garden?") == []


def test_split_contexts_takes_every_leading_context_sentence():
    assert split_contexts("Quick question. Just a small thing. When did Ana go?") == \
        ("Quick question. Just a small thing.", "When did Ana go?")
    assert split_contexts("When did Ana go?") == ("", "When did Ana go?")


_WORDS = sorted({w for s in ATTRIBUTES.values() for p in s.phrases for w in re.findall(r"[a-z]+", p)}
                | {w for ws in SCOPE_WORDS.values() for p in ws for w in re.findall(r"[a-z]+", p)}
                | {"works", "worked", "trains", "dating", "the", "of", "Lena", "city"})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12))
def test_attributes_and_scopes_are_found_where_any_of_their_phrases_matches(words):
    """extract() searches each attribute's (and scope's) phrases as one pattern: it must find exactly the
    attributes and scopes one of whose phrases matches on its own."""
    text = " ".join(words)
    m = extract(text, ())
    assert m.attributes == {a for a, s in ATTRIBUTES.items() if any(re.search(p, text, re.I) for p in s.phrases)}
    assert m.scopes == {s for s, ws in SCOPE_WORDS.items() if any(re.search(p, text, re.I) for p in ws)}
