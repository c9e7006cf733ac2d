"""Oracle checks are modules: each says when it could fail and what it finds, the verdict is the first that fails,
and a check added as one module is judged, counted before execution and embedded in the reproducer with nothing
else changed."""

from __future__ import annotations

import importlib
import sys
import types

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.model import (
    Checkpoint,
    Execution,
    FuzzCase,
    MutationDescriptor,
    Provenance,
    Query,
    QueryFields,
    Reference,
    StateOp,
)
from ufuzz.oracles import checks as oracle_checks
from ufuzz.oracles.checks import Check, Responded, Selected, checks_of
from ufuzz.oracles.expectations import RESPONSE, SELECTION, selection
from ufuzz.oracles.oracle import could_fail
from ufuzz.oracles.verdict import Context
from ufuzz.reports.reproducer import verdict_source

IDS = st.sampled_from([f"m{i}" for i in range(6)])


@st.composite
def selections(draw) -> tuple[Reference, Selected, tuple[str, ...]]:
    abstain = draw(st.booleans())
    ref = Reference("q", None if abstain else "x", abstain=abstain,
                    supporting=tuple(draw(st.lists(IDS, max_size=2, unique=True))),
                    invalidated=tuple(draw(st.lists(IDS, max_size=2, unique=True))))
    top = draw(st.lists(IDS, max_size=5, unique=True))
    deleted = tuple(draw(st.lists(IDS, max_size=2, unique=True)))
    threshold = draw(st.sampled_from([None, 0.5]))
    seen = Selected(ref, top, frozenset(deleted), frozenset(ref.invalidated),
                    [r for r, i in enumerate(top) if i in set(ref.supporting)], threshold)
    return ref, seen, deleted


@settings(max_examples=400, deadline=None)
@given(selections())
def test_a_selection_check_that_says_it_cannot_fail_never_finds_anything(drawn):
    ref, seen, deleted = drawn
    for check in checks_of(SELECTION):
        if not check.could_fail(ref, deleted, seen.threshold):
            assert check.find(seen) is None, check.name


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.booleans(), st.booleans(), st.lists(st.sampled_from(["old", "older"]), max_size=2))
def test_a_response_check_that_says_it_cannot_fail_never_finds_anything(abstain, right, abstained, stale):
    ref = Reference("q", None if abstain else "x", abstain=abstain, stale_answers=("old", "older"))
    seen = Responded(ref, right and not abstain, abstained, stale, ("m1",) if stale else (), ("m0",))
    for check in checks_of(RESPONSE):
        if not check.could_fail(ref, (), None):
            assert check.find(seen) is None, check.name
    failing = [c.name for c in checks_of(RESPONSE) if c.find(seen) is not None]
    assert (not failing) == seen.passed  # a response that does not pass fails some check


def _case(ops: tuple[StateOp, ...] = ()) -> FuzzCase:
    q = Query("q1", "Where does Ana live?", QueryFields("Ana", "city", "current", True))
    return FuzzCase(id="x1", seed_id="s1", checkpoint_id="c1", query=q, descriptor=MutationDescriptor(),
                    provenance=Provenance.of(Checkpoint("c1", (), ())), ops=ops)


def test_could_fail_follows_the_checks_of_the_levels_judged():
    answerable, abstaining = Reference("q1", "Lyon", supporting=("m1",)), Reference("q1", None, abstain=True)
    deleting = _case((StateOp("delete", "m1"),))
    assert could_fail(_case(), answerable, False, Context(visible=True))
    assert not could_fail(_case(), abstaining, False, Context(visible=True))  # nothing can say it was wrong
    assert could_fail(_case(), abstaining, False, Context(visible=True, threshold=0.3))  # unsupported_retrieved
    assert could_fail(deleting, abstaining, False, Context(visible=True))  # deleted_evidence_retrieved
    assert not could_fail(deleting, abstaining, False, Context(visible=True), on_parent_state=True)
    assert not could_fail(_case(), answerable, False, Context(visible=False))  # hidden and nothing responds
    assert could_fail(_case(), abstaining, True, Context(visible=False))  # a response can be judged


_NEW_CHECK = '''"""A memory returned twice in one result list."""

from __future__ import annotations

from ufuzz.oracles.checks.base import Check, Selected


class DuplicateResult(Check):
    name = "duplicate_result"
    level = "selection"
    order = 5

    def could_fail(self, reference, deleted, threshold) -> bool:
        return True

    def find(self, seen: Selected) -> tuple[str, ...] | None:
        twice = sorted({i for i in seen.top if seen.top.count(i) > 1})
        return tuple(twice) or None
'''


def test_a_check_added_as_one_module_is_judged_counted_and_embedded(tmp_path, monkeypatch):
    (tmp_path / "ufuzz_test_duplicate_check.py").write_text(_NEW_CHECK)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = dict(Check._registry)
    try:
        module = importlib.import_module("ufuzz_test_duplicate_check")
        monkeypatch.setattr(oracle_checks, "modules", [*oracle_checks.modules, module.__name__])
        ex = Execution("x1", "k", "q", top_ids=["m1", "m2", "m1"], top_scores=[0.9, 0.8, 0.7])
        ref = Reference("q1", "Lyon", supporting=("m1",))
        got = selection(ref, ex)
        assert (got.passed, got.kind, got.offending) == (False, "duplicate_result", ("m1",))
        assert could_fail(_case(), Reference("q1", None, abstain=True), False, Context(visible=True))
        embedded = types.ModuleType("ufuzz_verdict_check_test")
        sys.modules[embedded.__name__] = embedded
        for part in verdict_source():
            exec(compile(part, "<embedded>", "exec"), embedded.__dict__)
        theirs = embedded.selection(ref, ex)
        assert (theirs.passed, theirs.kind, theirs.offending) == (False, "duplicate_result", ("m1",))
    finally:
        Check._registry.clear()
        Check._registry.update(before)
        Check._ordered.clear()
        sys.modules.pop("ufuzz_test_duplicate_check", None)
        sys.modules.pop("ufuzz_verdict_check_test", None)
    assert selection(Reference("q1", "Lyon", supporting=("m1",)),
                     Execution("x1", "k", "q", top_ids=["m1", "m2", "m1"])).passed
