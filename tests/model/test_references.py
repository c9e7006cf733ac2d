"""References are right by construction: ``Provenance.reference_for`` against an independent brute-force
definition over random value histories (appends, in-place rewrites, deletes of the current value, of
everything, of single memories), for the scopes current, previous and any."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import Checkpoint, Fact, Memory, Provenance, QueryFields, UndefinedReference

E, A = "Tamsin", "pet"
VALUES = ("Biscuit", "Pepper", "biscuit", "Mochi", "Ziggy")  # "biscuit" repeats a value in other case


@dataclass
class Rec:
    """One value of the history as the brute force keeps it: when it started, its memories, still alive ones."""

    value: str
    time: int
    memories: list[str]
    alive: set[str] = field(default_factory=set)
    superseded: bool = False


class Brute:
    """Keeps the history as plain records and answers questions by reading the definition literally."""

    def __init__(self) -> None:
        self.recs: list[Rec] = []
        self.clock = 0
        self.n = 0

    def _mem(self) -> str:
        self.n += 1
        return f"m{self.n}"

    def set_value(self, value: str, overwrite: str | None = None) -> str:
        for r in self.recs:
            r.superseded = True
        if overwrite is not None:
            for r in self.recs:
                r.alive.discard(overwrite)
        self.clock += 1
        mid = self._mem()
        self.recs.append(Rec(value, self.clock, [mid], {mid}))
        return mid

    def delete(self, mids: set[str]) -> None:
        for r in self.recs:
            r.alive -= mids

    # -- the definition, read literally ------------------------------------------------------------------
    def _in_memory(self) -> list[Rec]:
        return [r for r in self.recs if r.alive]

    def current(self) -> Rec | None:
        cands = [r for r in self.recs if not r.superseded and r.alive]
        return cands[-1] if cands else None

    def expected(self, scope: str):
        """(answers in order, supporting, invalidated, stale values) or "undefined"."""
        def fold(values):
            out = []
            for v in values:
                if v.casefold() not in [o.casefold() for o in out]:
                    out.append(v)
            return out

        gone = [r for r in self.recs if not r.alive]
        if scope == "current":
            cur = self.current()
            if cur is None and self._in_memory():  # the latest value deleted, earlier ones left
                return "undefined"
            good = [cur] if cur else []
            bad = [r for r in self.recs if r is not cur]
        elif scope == "previous":
            if not self._in_memory():
                good, bad = [], gone
            else:
                cur = self.current()
                if cur is None:
                    return "undefined"
                before = [r for r in self.recs if r is not cur and r.time < cur.time]
                if before and not before[-1].alive:
                    return "undefined"
                good, bad = [r for r in reversed(before) if r.alive], gone  # every earlier value, latest first
        else:
            good = sorted(self._in_memory(), key=lambda r: r.time, reverse=True)
            bad = gone
        answers = fold([r.value for r in good])
        support = {m for r in good for m in r.alive}
        invalid = {m for r in bad for m in r.memories} - support
        stale = {r.value for r in bad if r.value.casefold() not in [a.casefold() for a in answers]}
        return answers, support, invalid, stale


def _apply(prov: Provenance, brute: Brute, step) -> Provenance:
    kind, arg = step
    if kind in ("append", "rewrite"):
        act = prov.active(E, A)
        overwrite = None
        if kind == "rewrite" and act is not None:
            overwrite = sorted(act.evidence)[-1]
        mid = brute.set_value(VALUES[arg % len(VALUES)], overwrite)
        ts = f"2024-01-{brute.clock + 1:02d}"
        prov = prov.with_update(E, A, VALUES[arg % len(VALUES)], [mid], ts,
                                removed_ids=[overwrite] if overwrite else ())
        return prov.with_memory(mid, f"{E}'s pet is {VALUES[arg % len(VALUES)]}.")
    if kind == "delete_current":
        act = prov.active(E, A)
        ids = set(act.evidence) if act else set()
    elif kind == "delete_all":
        ids = prov.relevant_ids(E, A)
    else:  # delete one memory by position
        live = sorted(prov.relevant_ids(E, A))
        ids = {live[arg % len(live)]} if live else set()
    brute.delete(ids)
    return prov.with_deletion(ids)


steps = st.lists(st.tuples(st.sampled_from(["append", "append", "rewrite", "delete_current", "delete_all",
                                            "delete_one"]), st.integers(0, 20)), max_size=8)


def _start(first: int, brute: Brute, value_type: str = "text") -> Provenance:
    mid = brute.set_value(VALUES[first])
    cp = Checkpoint(id="c", memories=(Memory(mid, f"{E}'s pet is {VALUES[first]}.", "2024-01-01"),),
                    facts=(Fact(E, A, VALUES[first], (mid,), valid_from="2024-01-01", value_type=value_type),))
    return Provenance.of(cp)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(VALUES) - 1), steps, st.sampled_from(["current", "previous", "any"]),
       st.sampled_from(["text", "date", "year", "relative_date"]))
def test_reference_matches_the_brute_force_definition(first, history, scope, value_type):
    brute = Brute()
    prov = _start(first, brute, value_type)
    for step in history:
        prov = _apply(prov, brute, step)
    # an event has one date: asked over every value of a date that a later one superseded, a question asks the one
    # now recorded (with one value in its history, both scopes read the same)
    dated_history = value_type != "text" and len(brute.recs) > 1
    want = brute.expected("current" if scope == "any" and dated_history else scope)
    fields = QueryFields(E, A, scope)
    if want == "undefined":
        with pytest.raises(UndefinedReference):
            prov.reference_for("q", fields)
        assert not prov.defines(fields)
        return
    ref = prov.reference_for("q", fields)
    answers, support, invalid, stale = want
    if not answers:
        assert ref.abstain and ref.answer is None
    else:
        assert [ref.answer, *ref.aliases] == answers
    assert set(ref.supporting) == support
    assert set(ref.invalidated) == invalid
    assert set(ref.stale_answers) == stale
    # what a reference may never do, whatever the history
    assert not set(ref.supporting) & set(ref.invalidated)
    assert set(ref.supporting) <= prov.memory_ids
    assert all(s.casefold() != a.casefold() for s in ref.stale_answers for a in (ref.answer or "", *ref.aliases))


def test_any_scope_accepts_every_value_still_in_memory():
    """The audit's case: "Which pet has Tamsin kept at any point?" must not flag a past pet as stale."""
    brute = Brute()
    prov = _start(0, brute)
    prov = _apply(prov, brute, ("append", 1))
    ref = prov.reference_for("q", QueryFields(E, A, "any"))
    assert {ref.answer, *ref.aliases} == {"Biscuit", "Pepper"} and not ref.stale_answers and not ref.invalidated


def test_a_recurring_date_or_a_lone_superseded_one_is_still_asked_over_every_value():
    """Review of the date rule: two valid dates (an event that happened twice) are both answers, and a date no longer
    valid with nothing after it is still the one in memory — only a date superseding another corrects it."""
    mems = (Memory("m1", "Tamsin went on 2 May 2023.", "2024-01-01"), Memory("m2", "Again on 9 May 2023.", "2024-01-02"))
    twice = Provenance.of(Checkpoint(id="c", memories=mems, facts=(
        Fact(E, A, "2 May 2023", ("m1",), valid_from="2024-01-01", value_type="date"),
        Fact(E, A, "9 May 2023", ("m2",), valid_from="2024-01-02", value_type="date"))))
    ref = twice.reference_for("q", QueryFields(E, A, "any"))
    assert {ref.answer, *ref.aliases} == {"2 May 2023", "9 May 2023"} and not ref.invalidated
    lone = Provenance.of(Checkpoint(id="c", memories=mems[:1], facts=(
        Fact(E, A, "2 May 2023", ("m1",), valid=False, valid_from="2024-01-01", value_type="date"),)))
    assert lone.reference_for("q", QueryFields(E, A, "any")).answer == "2 May 2023"


def test_previous_scope_after_two_updates_is_the_value_just_replaced_and_nothing_is_stale():
    brute = Brute()
    prov = _start(0, brute)
    for v in (1, 3):
        prov = _apply(prov, brute, ("append", v))
    ref = prov.reference_for("q", QueryFields(E, A, "previous"))
    assert ref.answer == "Pepper" and not ref.stale_answers and not ref.invalidated
    # the value before that is a previous value too (an alias), and its evidence supports the answer
    assert ref.aliases == (VALUES[0],) and len(ref.supporting) == 2
