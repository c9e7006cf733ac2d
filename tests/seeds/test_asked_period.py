"""An update's new date stays in the period its question names (LoCoMo audit: "When did Caroline go to a pride
parade during the summer?" was offered "12 May 2023", which makes the question itself point at the old memory)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from ufuzz.seeds.importers.fields import _MONTH_NAMES, _day, in_asked_period, value_pool


def test_a_season_a_month_or_a_year_in_the_question_bounds_the_new_date():
    summer = "When did Caroline go to a pride parade during the summer?"
    assert not in_asked_period("12 May 2023", summer) and in_asked_period("2 July 2023", summer)
    assert not in_asked_period("12 June 2023", "When did Melanie go camping in July?")
    assert not in_asked_period("12 May 2022", "What did she paint in May 2023?")
    assert in_asked_period("3 October 2023", "What did she do in the fall?")
    assert not in_asked_period("3 July 2023", "What did she do in the fall?")


def test_words_that_only_look_like_periods_bound_nothing():
    assert in_asked_period("3 October 2023", "When did Melanie fall off her bike?")  # a verb, not the season
    assert in_asked_period("12 May 2023", "May I ask when she went to the parade?")  # a modal, not the month
    assert in_asked_period("Sunday", "What did she do in the summer?")  # no date: nothing to bound
    assert in_asked_period("12 May 2023", "When did Caroline go to the parade?")


def test_a_relative_dates_pool_can_hold_nothing_of_the_asked_month():
    """The pool the importer filters: a relative date anchored mid-July gives June and May dates — none for a
    question about July (recall lost, never a contradictory update)."""
    pool = value_pool("two weekends before 17 July 2023", "relative_date", set(), ())
    assert pool and not [v for v in pool if in_asked_period(v, "When did Melanie go camping in July?")]


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2039, 12, 31)), st.integers(min_value=1, max_value=11))
def test_a_date_is_in_its_own_month_and_year_and_in_no_other_month(d, shift):
    own = f"What happened in {_MONTH_NAMES[d.month - 1]} {d.year}?"
    other = f"What happened in {_MONTH_NAMES[(d.month - 1 + shift) % 12]}?"
    assert in_asked_period(_day(d), own)
    assert not in_asked_period(_day(d), other)
    assert not in_asked_period(_day(d + timedelta(days=366)), own)


def test_a_year_bounds_only_by_its_year():
    assert in_asked_period("2022", "When, in the summer of 2022, did Ana paint a sunrise?")
    assert not in_asked_period("2021", "When, in the summer of 2022, did Ana paint a sunrise?")
    assert in_asked_period("2021", "When did Ana paint a sunrise in the summer?")


def test_the_locomo_importer_keeps_an_update_in_the_asked_period(tmp_path):
    """Imported end to end: the same event asked plainly gets dates in May and April to move to; asked "in May"
    only the May ones."""
    import json

    from ufuzz.seeds.importers import import_file

    turns = [("Ana", "Hey Ben! How was your week?"), ("Ben", "Busy, but good. You?"),
             ("Ana", "Great! Last weekend I went to a pottery class with my sister."),
             ("Ben", "Nice, what did you make?"), ("Ana", "A small bowl, it came out lopsided but I love it.")]
    conv = {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_2_date_time": "2:00 pm on 20 June, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "Hi Ana!"}],
            "session_2": [{"speaker": w, "dia_id": f"D2:{i + 1}", "text": t} for i, (w, t) in enumerate(turns)]}
    pools = {}
    for question in ("When did Ana go to a pottery class?", "When did Ana go to a pottery class in May?"):
        path = tmp_path / "conv.json"
        qa = [{"question": question, "answer": "The weekend before 20 June 2023", "evidence": ["D2:3"],
               "category": 2}]
        path.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": qa}]))
        res = import_file("locomo", path)
        [seed] = res.suite.seeds or [None]
        assert seed is not None, res.dropped
        pools[question] = seed.descriptor.value_pool
    plain, may = pools.values()
    assert any(not in_asked_period(v, "What then, in May?") for v in plain)  # April is on offer when no month is asked
    assert may and all(in_asked_period(v, "What then, in May?") for v in may)
    # told on 20 June of a weekend since the first talk (8 May): no correction moves it before that talk
    assert all(date(2023, 5, 8) <= datetime.strptime(v, "%d %B %Y").date() < date(2023, 6, 20) for v in plain + may)


def test_the_locomo_importer_moves_a_date_between_the_talks_around_it(tmp_path):
    """Told on 11 May as "two days ago", the last talk on 8 May: the update may write 10 May — not 8 May, the day of
    that talk (it holds only if the visit followed the talk: three hand audits read such corrections as doubtful),
    and never a day before the last talk, which the fixed shifts of a day date (a week, ten days, …) all are."""
    from tests.support.locomo_kit import conversation, import_locomo

    conv = conversation(("1:00 pm on 8 May, 2023", [("Ana", "Hi Ben!"), ("Ben", "Hi Ana!")]),
                        ("2:00 pm on 11 May, 2023", [("Ana", "Since we last talked I went to the zoo two days ago!"),
                                                     ("Ben", "Fun! Which animals?")]))
    qa = [{"question": "When did Ana go to the zoo?", "answer": "9 May 2023", "evidence": ["D2:1"], "category": 2}]
    [seed] = import_locomo(tmp_path, conv, qa).suite.seeds
    assert seed.descriptor.value_pool == ("10 May 2023",)
