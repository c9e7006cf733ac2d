"""An update of when an event happened corrects its date (LoCoMo hand audit: 86 of 88 updates landed on "When did
…" questions, which ask over every value, so the superseded "yesterday" stayed an accepted answer and a state that
ranked it above its replacement — or retrieved it alone — was never reported). A question over every value of
anything else still accepts each value left in memory."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.operator_kit import embedded
from ufuzz.model import (
    Checkpoint,
    Entity,
    Execution,
    Fact,
    FuzzCase,
    Memory,
    MutationDescriptor,
    Query,
    QueryFields,
)
from ufuzz.model.provenance import Provenance
from ufuzz.operators import Rejected, StateView
from ufuzz.operators.update import Update
from ufuzz.oracles.expectations import selection
from ufuzz.seeds.importers.fields import _period, date_of, gap_days, in_gap, same_side, weekday_conflict

PEOPLE = (Entity("Melanie", "person"), Entity("Caroline", "person"))
MEMORIES = (Memory("D15:1", "Caroline: How was your weekend, Mel?", "2023-08-28T13:50:00"),
            Memory("D15:2", "Melanie: I took my kids to a park yesterday, they loved the swings.",
                   "2023-08-28T13:51:00"),
            Memory("D15:3", "Melanie: I painted a sunset over the lake last week.", "2023-08-28T13:52:00"))


def _case(attribute: str, value: str, value_type: str, evidence: str, question: str, pool: tuple[str, ...]):
    told = next(m.timestamp for m in MEMORIES if m.id == evidence)
    fact = Fact("Melanie", attribute, value, (evidence,), value_type=value_type, valid_from=told)
    ck = Checkpoint("c1", MEMORIES, (fact,), PEOPLE)
    fields = QueryFields(entity="Melanie", attribute=attribute, scope="any", answerable=True)
    query = Query(id="q1", text=question, fields=fields)
    case = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query,
                    descriptor=MutationDescriptor(value_pool=pool), provenance=Provenance.of(ck))
    return case, ck


def _update(tmp_path, case, ck, target):
    backend = embedded(tmp_path)
    try:
        view = StateView(backend, backend.fork(backend.build(ck)))
        m = Update().mutate(case, None, target, random.Random(0), view)
        return m, Update().validate(case, m, view)
    finally:
        backend.close()


def test_a_later_date_of_one_event_corrects_the_old_one(tmp_path):
    case, ck = _case("time", "27 August 2023", "date", "D15:2", "When did Melanie go to the park?",
                     ("20 August 2023",))
    assert case.provenance.scope_of(case.query.fields) == "any"  # no history yet: asked over any value
    before = case.provenance.reference_for("q1", case.query.fields)
    assert before.answer == "27 August 2023" and before.supporting == ("D15:2",) and not before.invalidated
    m, verdict = _update(tmp_path, case, ck, "value=20 August 2023")
    assert verdict.ok, verdict.reason
    new_id = m.ops[0].memory.id
    assert "on 20 August 2023" in m.ops[0].memory.text
    assert m.provenance.scope_of(case.query.fields) == "current"  # one date superseding another: a correction
    ref = m.reference
    assert ref.answer == "20 August 2023" and not ref.aliases and ref.supporting == (new_id,)
    assert ref.invalidated == ("D15:2",) and ref.stale_answers == ("27 August 2023",)
    # the superseded turn ranked above its replacement is now a failure, as it is for any other updated fact
    ex = Execution("x1", "k", case.query.text, top_ids=["D15:2", new_id], top_scores=[0.61, 0.60],
                   top_texts=[MEMORIES[1].text, m.ops[0].memory.text])
    got = selection(ref, ex)
    assert not got.passed and got.kind == "stale_ranked_above_valid" and got.offending == ("D15:2",)
    assert selection(ref, Execution("x1", "k", case.query.text, top_ids=[new_id, "D15:2"])).passed


def test_a_question_over_every_value_of_anything_else_still_accepts_the_old_value(tmp_path):
    case, ck = _case("painting", "sunset", "text", "D15:3", "What did Melanie paint?", ("forest",))
    assert case.provenance.scope_of(case.query.fields) == "any"
    m, verdict = _update(tmp_path, case, ck, "value=forest")
    assert verdict.ok, verdict.reason
    ref = m.reference
    assert {ref.answer, *ref.aliases} == {"forest", "sunset"} and not ref.invalidated and not ref.stale_answers


def test_a_past_event_stays_past_and_a_plan_stays_a_plan(tmp_path):
    """Hand audit: "yesterday" (told 28 August) rewritten to a September date, and a plan for June rewritten to a
    May that was over when the plan was told, contradict the conversation around the turn."""
    case, ck = _case("time", "27 August 2023", "date", "D15:2", "When did Melanie go to the park?",
                     ("6 September 2023", "29 August 2023", "20 August 2023", "2 August 2023"))
    assert Update().targets(case) == ["value=20 August 2023", "value=2 August 2023"]
    with pytest.raises(Rejected, match="side of the time"):
        _update(tmp_path, case, ck, "value=29 August 2023")
    assert same_side("June 2023", "August 2023", "2023-05-25T13:14:06")  # a plan told on 25 May
    assert not same_side("June 2023", "May 2023", "2023-05-25T13:14:06")
    assert same_side("The week before 25 August 2023", "1 August 2023", "2023-08-25T10:00:00")
    assert not same_side("The week before 25 August 2023", "2 September 2023", "2023-08-25T10:00:00")
    assert not same_side("sometime soon", "2 September 2023", "2023-08-25T10:00:00")  # no side: no update
    assert same_side("sometime soon", "2 September 2023", None)  # no telling time: nothing to hold it to
    # a month that holds the telling day says nothing: the question's tense does, and without one there is no update
    plan, when = "When is Caroline going to the transgender conference?", "2023-07-03T13:36:12"
    assert same_side("July 2023", "August 2023", when, plan) and not same_side("July 2023", "May 2023", when, plan)
    trip = "When was Jon in Rome?"
    assert same_side("July 2023", "May 2023", when, trip) and not same_side("July 2023", "August 2023", when, trip)
    assert not same_side("July 2023", "May 2023", when) and not same_side("July 2023", "August 2023", when)
    # a present perfect asks the past ("When Gina has lost her job at Door Dash?", LoCoMo; "When has he been to
    # Rome?"); "have to" and "have a" ask nothing of it
    for past in ("When Gina has lost her job at Door Dash?", "When has Jon been to Rome?"):
        assert same_side("July 2023", "May 2023", when, past) and not same_side("July 2023", "August 2023", when, past)
    for neither in ("When does Jon have to leave Rome?", "When does Jon have a trip to Rome?",
                    "When does Jon have red wine in Rome?"):
        assert not same_side("July 2023", "May 2023", when, neither)


_DAY = st.dates(min_value=date(2020, 1, 1), max_value=date(2026, 12, 31))


@given(old=_DAY, new=_DAY, told=_DAY)
def test_two_dates_are_on_one_side_when_both_are_before_the_telling_or_both_after(old, new, told):
    fmt = "%d %B %Y"
    got = same_side(old.strftime(fmt), new.strftime(fmt), f"{told.isoformat()}T13:00:00")
    # the telling day itself is on neither side (an event of that day, or a plan for later that day)
    assert got == (told not in (old, new) and (old < told) == (new < told))


SESSIONS = (Memory("D14:1", "Melanie: Hi Caroline! Busy week with the kids.", "2023-08-25T13:50:00"),
            Memory("D15:1", "Melanie: Since we last spoke, I took my kids to a park yesterday.", "2023-08-28T13:51:00"))


def test_a_correction_stays_between_the_talks_around_its_old_date(tmp_path):
    """Hand audit: a park visit told "since we last spoke" (28 August; the last talk 25 August) moved to 10 August,
    before that talk — the rewrite contradicts its own sentence. A correction may not cross a day the conversation
    was told on, nor land on one (the visit would have to follow the talk that day: read as doubtful in three
    audits)."""
    fact = Fact("Melanie", "time", "27 August 2023", ("D15:1",), value_type="date", valid_from=SESSIONS[1].timestamp)
    ck = Checkpoint("c1", SESSIONS, (fact,), PEOPLE)
    query = Query(id="q1", text="When did Melanie go to the park?",
                  fields=QueryFields(entity="Melanie", attribute="time", scope="any", answerable=True))
    pool = ("10 August 2023", "26 August 2023", "25 August 2023")
    case = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query,
                    descriptor=MutationDescriptor(value_pool=pool), provenance=Provenance.of(ck))
    for target, ok in (("value=10 August 2023", False), ("value=26 August 2023", True),
                       ("value=25 August 2023", False)):
        if not ok:
            with pytest.raises(Rejected, match="crosses a day the conversation was told on"):
                _update(tmp_path, case, ck, target)
            continue
        m, verdict = _update(tmp_path, case, ck, target)
        assert verdict.ok, verdict.reason
        assert m.reference.answer == target.partition("=")[2]


@pytest.mark.parametrize("value, first, last", [
    ("The Friday before 15 July 2023", date(2023, 7, 14), date(2023, 7, 14)),  # a Saturday: the day before
    ("The sunday before 25 May 2023", date(2023, 5, 21), date(2023, 5, 21)),
    ("The weekend before 17 July 2023", date(2023, 7, 15), date(2023, 7, 16)),
    ("two weekends before 17 July 2023", date(2023, 7, 8), date(2023, 7, 9)),
    ("The week before 6 July 2023", date(2023, 6, 26), date(2023, 7, 5)),  # the calendar week or the 7 days
    ("two days before 9 June 2023", date(2023, 6, 7), date(2023, 6, 7)),
    ("The week of 23 August 2023", date(2023, 8, 20), date(2023, 8, 27)),
    ("June 2023", date(2023, 6, 1), date(2023, 6, 30)),
    ("2022", date(2022, 1, 1), date(2022, 12, 31)),
])
def test_a_date_names_the_days_its_words_can_mean(value, first, last):
    assert _period(value) == (first, last)


_DAYS = st.lists(_DAY, min_size=1, max_size=6, unique=True)


@given(old=_DAY, new=_DAY, days=_DAYS, on_a_talk=st.booleans())
def test_a_correction_is_in_the_gap_of_its_old_day_when_no_telling_day_lies_between_them(old, new, days, on_a_talk):
    fmt = "%d %B %Y"
    new = days[-1] if on_a_talk else new
    got = in_gap(old.strftime(fmt), new.strftime(fmt), days, None)
    # a day the conversation was told on cannot be placed without the question's tense, nor written as a new
    # date; one between them is crossed
    assert got == (old not in days and new not in days and old != new
                   and not any(min(old, new) < t < max(old, new) for t in days))


def test_a_date_holding_a_talk_moves_only_to_where_no_talk_missed_it():
    """An event of the day of an earlier talk (21 July), first told two days later: it may have followed that talk,
    so a correction moves it later, never before the talk; a week holding the last talk has no day left outside
    it before the telling day."""
    days = (date(2023, 7, 9), date(2023, 7, 21), date(2023, 7, 23))
    told = "2023-07-23T10:00:00"
    assert in_gap("21 July 2023", "22 July 2023", days, told, "When did Gina go to a dance class?")
    assert not in_gap("21 July 2023", "20 July 2023", days, told, "When did Gina go to a dance class?")
    assert not in_gap("21 July 2023", "22 July 2023", days, None)  # no telling day to place it by
    assert gap_days("The week before 23 July 2023", days, told, "When did she?", until=date(2023, 7, 23)) == []
    assert gap_days("21 July 2023", days, told, "When did she?", until=date(2023, 7, 23))[0] == "22 July 2023"


@given(old=_DAY, days=_DAYS, until=_DAY)
def test_the_days_on_offer_are_new_in_the_gap_and_not_after_the_conversation(old, days, until):
    fmt = "%d %B %Y"
    for v in gap_days(old.strftime(fmt), days, None, "", until=until):
        d = date_of(v)
        assert d != old and d <= until and in_gap(old.strftime(fmt), v, days, None)


def test_a_date_update_leaves_no_evidence_stale_that_does_not_tell_the_date(tmp_path):
    """Hand audit: a sunrise painted "last year", its photo turn (no date) marked as evidence too — once the update
    corrects the date, that photo would be stale without stating anything stale, and could be reported as the
    superseded memory. An update of a date is offered only where every evidence turn tells it."""
    photo = Memory("D15:4", "Melanie: Here it is! [image: a painting of a sunset over a lake]", "2023-08-28T13:53:00")
    fact = Fact("Melanie", "time", "The week before 28 August 2023", ("D15:3", "D15:4"), value_type="relative_date",
                valid_from=MEMORIES[2].timestamp)
    ck = Checkpoint("c1", (*MEMORIES, photo), (fact,), PEOPLE)
    query = Query(id="q1", text="When did Melanie paint a sunset?",
                  fields=QueryFields(entity="Melanie", attribute="time", scope="any", answerable=True))
    case = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query,
                    descriptor=MutationDescriptor(value_pool=("10 August 2023",)), provenance=Provenance.of(ck))
    assert Update().targets(case) == []
    with pytest.raises(Rejected, match="does not state the value"):
        _update(tmp_path, case, ck, "value=10 August 2023")
    alone = FuzzCase(id="s1", seed_id="s1", checkpoint_id="c1", query=query, descriptor=case.descriptor,
                     provenance=Provenance.of(Checkpoint("c1", ck.memories, (replace(fact, evidence=("D15:3",)),),
                                                         PEOPLE)))
    assert Update().targets(alone) == ["value=10 August 2023"]


@pytest.mark.parametrize("answer, turn, conflict", [
    ("The sunday before 25 May 2023", "Melanie: Since we last chatted, I ran a charity race last Saturday!", True),
    ("The Saturday before 25 May 2023", "Melanie: Since we last chatted, I ran a charity race last Saturday!", False),
    ("The Friday before 15 July 2023", "Caroline: I went to an adoption meeting last Fri.", False),
    ("The Friday before 15 July 2023", "Caroline: I went to an adoption meeting yesterday.", False),  # no weekday
    ("The week before 25 May 2023", "Melanie: I ran a charity race last Saturday!", False),  # the answer names none
    ("25 May 2023", "Melanie: I ran a charity race last Saturday!", False),
])
def test_an_answer_naming_another_weekday_than_its_evidence_contradicts_it(answer, turn, conflict):
    assert weekday_conflict(answer, [turn]) is conflict


def test_the_relative_time_rewritten_is_the_one_that_tells_the_date():
    """Hand audit (LoCoMo): a turn with two relative times dates its event by the one that can mean the answer
    ("last week", not "three years ago", for the week before 9 June); a turn whose one relative time means another
    date ("next month", told on 3 April, for "April 2023") tells that date of another event, and is not rewritten."""
    from ufuzz.seeds.importers.fields import rewrite_time, time_of

    told = "2023-06-09T19:55:00"
    text = "Caroline: I wanted to tell you about my school event last week. I started transitioning three years ago."
    assert time_of(text, "The week before 9 June 2023", told).group(0) == "last week"
    assert rewrite_time(text, "28 May 2023", "The week before 9 June 2023", told) == text.replace(
        "last week", "on 28 May 2023")
    assert rewrite_time(text, "28 May 2023") is None  # without the old date: which one cannot be told
    both = "Ana: I ran last week and swam this week."
    assert time_of(both, "The week before 9 June 2023", told) is None  # either can mean it
    expanding = "Jon: I'm expanding my studio's social media and hosting a dance competition next month."
    assert rewrite_time(expanding, "31 March 2023", "April, 2023", "2023-04-03T13:26:12") is None
    assert rewrite_time(expanding, "30 April 2023", "May, 2023", "2023-04-03T13:26:12") == expanding.replace(
        "next month", "on 30 April 2023")


@pytest.mark.parametrize(("text", "rewritten"), [
    ("Gina: Last week was wild, I got noticed by fashion editors.", None),
    ("Gina: I've been going to the gym since last week.", None),
    ("Gina: Earlier this month I opened my store.", None),
    ("Gina: I met last year's winner.", None),
    ("Melanie: That roadtrip this past weekend was insane!", "Melanie: That roadtrip on 30 June 2023 was insane!"),
    ("Jon: I went there last week and it was great.", "Jon: I went there on 30 June 2023 and it was great."),
])
def test_a_date_is_written_only_where_it_reads_as_a_sentence(text, rewritten):
    """A relative time used as a noun (a sentence's subject, a possessive) or governed by a preposition or an adverb
    cannot become "on <day>": the rewrite would be a garbled sentence, which no validator may pass."""
    from ufuzz.seeds.importers.fields import rewrite_time

    assert rewrite_time(text, "30 June 2023") == rewritten


def test_a_month_holding_its_telling_day_moves_to_a_day_of_the_gap_before_it():
    """"Started hitting the gym this month", told on 16 March after a talk on 8 February: no other month lies between
    the two talks, but the days of February after the earlier talk do — nearest first, none in March, none after the
    telling day, none before the earlier talk."""
    days = (date(2023, 2, 8), date(2023, 3, 16), date(2023, 3, 23))
    got = gap_days("March, 2023", days, "2023-03-16T14:35:00", "When did Jon start to go to the gym?",
                   until=date(2023, 7, 23))
    assert got[:3] == ["28 February 2023", "27 February 2023", "26 February 2023"]
    assert all(date(2023, 2, 8) <= date_of(v) <= date(2023, 2, 28) for v in got)
    assert gap_days("2022", days, "2023-03-16T14:35:00", "When did he?", until=date(2023, 7, 23)) == []
