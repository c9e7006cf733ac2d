"""Sibling questions (target change on real conversations), frequency bands and relative dates of updates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import QueryFields
from ufuzz.seeds import siblings
from ufuzz.seeds.importers.fields import (
    FREQUENCY_OVERLAPS,
    FREQUENCY_SCALES,
    RELATIVE_TIME,
    no_new_answer,
    rewrite_time,
    same_day_asked,
    same_or_overlapping_rate,
    value_pool,
    value_type_of,
)

NAMES = ["Caroline", "Melanie"]
WORDS = st.lists(st.sampled_from(["go", "to", "the", "museum", "pottery", "workshop", "paint", "run", "camp"]),
                 min_size=1, max_size=5).map(" ".join)


def _asked(texts: list[str]) -> list[tuple[str, QueryFields]]:
    return [(t, siblings.question_fields(t, NAMES)) for t in texts if siblings.question_fields(t, NAMES)]


def test_sibling_of_the_same_person_with_the_same_opening():
    asked = _asked(["When did Melanie go to the museum?", "When did Melanie go to the pottery workshop?",
                    "When did Caroline go to the pottery workshop?", "What did Melanie paint?",
                    "When did Melanie go camping with Caroline?"])
    got = siblings.siblings("When did Melanie go to the museum?", "Melanie", asked, NAMES)
    # another person's question, another opening, a question naming a second person: none is a sibling
    assert got == ("When did Melanie go to the pottery workshop?",)


def test_swap_keeps_the_parents_opening():
    assert siblings.swap("At what point in time did Melanie go to the museum?",
                         "When did Melanie go to the pottery workshop?", "Melanie") == \
        "At what point in time did Melanie go to the pottery workshop?"
    assert siblings.swap("When did she go?", "When did Melanie go?", "Melanie") is None


@settings(max_examples=60, deadline=None)
@given(opening=st.sampled_from(["When did ", "Where did ", "Why did "]), a=WORDS, b=WORDS,
       name=st.sampled_from(NAMES))
def test_swap_is_the_parents_opening_and_the_siblings_rest(opening, a, b, name):
    parent, sibling = f"{opening}{name} {a}?", f"When did {name} {b}?"
    new = siblings.swap(parent, sibling, name)
    assert new == f"{opening}{name} {b}?"
    assert siblings.split_at(new, name) == (opening, f"{name} {b}?")


@settings(max_examples=60, deadline=None)
@given(rest=st.lists(WORDS, min_size=1, max_size=6, unique=True), name=st.sampled_from(NAMES))
def test_siblings_never_offer_the_question_itself_or_another_person(rest, name):
    texts = [f"When did {n} {r}?" for r in rest for n in NAMES]
    asked = _asked(texts)
    question = texts[0] if name == NAMES[0] else texts[1]
    got = siblings.siblings(question, name, asked, NAMES)
    assert question not in got and len(got) <= siblings.MAX_SIBLINGS
    for s in got:
        assert s in texts and siblings.split_at(s, name)[0] == "When did "
        assert siblings.question_fields(s, NAMES).entity == name


def test_frequency_pool_stays_on_its_scale_and_is_never_a_synonym():
    pool = value_pool("once or twice a year", "text", set(), ())
    assert pool == ("every other year", "three times a year")  # "yearly" and "twice a year" it already covers
    assert "once or twice a year" not in value_pool("yearly", "text", set(), ())
    assert "every weekend" not in value_pool("weekly", "text", set(), ())
    assert same_or_overlapping_rate("Weekly", "every week") and same_or_overlapping_rate("yearly", "once or twice a year")
    assert not same_or_overlapping_rate("weekly", "every other week") and not same_or_overlapping_rate("pizza", "pizza")
    weekly = value_pool("Weekly", "text", set(), ())
    assert "Every week" not in weekly and "Once a week" not in weekly and "Every other week" in weekly


def test_a_new_time_on_the_same_weekday_is_no_new_answer_to_a_question_of_the_day():
    assert same_day_asked("Friday mornings", "Friday at dawn", "What is Anselm's gym day these days?")
    assert same_day_asked("every Tuesday", "Tuesdays at noon", "On what weekday does Jo swim?")
    assert not same_day_asked("Friday mornings", "Friday at dawn", "When does Anselm train?")  # the time is asked
    assert not same_day_asked("Friday mornings", "Saturday mornings", "What is Anselm's gym day?")
    assert not same_day_asked("Friday or Sunday", "Friday nights", "Which day does Bo run?")  # two days before
    assert no_new_answer("weekly", "every week", "") and no_new_answer("Friday nights", "Friday nights", "")
    assert not no_new_answer("Friday nights", "Monday nights", "gym day")


@given(st.sampled_from([r for scale in FREQUENCY_SCALES for rates in scale for r in rates]))
def test_every_frequency_has_other_rates_of_its_own_scale(rate):
    scale = next(s for s in FREQUENCY_SCALES if any(rate in rates for rates in s))
    mine = next(rates for rates in scale if rate in rates)
    pool = set(value_pool(rate, "text", set(), ()))
    assert pool and not pool & set(mine)
    assert pool <= {rates[0] for rates in scale}
    assert not any(frozenset({mine[0], other}) in FREQUENCY_OVERLAPS for other in pool)
    assert not any(same_or_overlapping_rate(rate, other) for other in pool)  # what the update validator rejects


def test_relative_dates_are_dated_and_rewritten_as_told():
    v = "The week before 9 June 2023"
    assert value_type_of(v) == "relative_date"
    assert value_type_of("The week before lunch") == "text"
    pool = value_pool(v, "relative_date", set(), ())
    assert pool and all(value_type_of(p) == "date" for p in pool)
    assert rewrite_time("I went there last week, it was great.", v) == \
        "I went there the week before 9 June 2023, it was great."
    assert RELATIVE_TIME.search("I ran last Fri.") and RELATIVE_TIME.search("two weekends ago")
    assert rewrite_time("last week and yesterday", v) is None  # which one dates it cannot be told
