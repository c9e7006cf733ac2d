"""Oracle checks are modules: each says when it could fail and what it finds, the verdict is the first that fails,
and a check added as one module is judged, counted before execution and embedded in the reproducer with nothing
else changed."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
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
@given(st.booleans(), st.booleans(), st.booleans(), st.lists(st.sampled_from(["old", "older"]), max_size=2,
                                                             unique=True), st.data())
def test_a_response_check_that_says_it_cannot_fail_never_finds_anything(abstain, right, abstained, stales, data):
    ref = Reference("q", None if abstain else "x", abstain=abstain, stale_answers=tuple(stales))
    stale = data.draw(st.lists(st.sampled_from(stales), unique=True) if stales else st.just([]))  # those it states
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


def _registered(tmp_path, monkeypatch, name: str, source: str):
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def _embedded(name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    for part in verdict_source():
        exec(compile(part, "<embedded>", "exec"), mod.__dict__)
    return mod


@pytest.fixture
def registry():
    """The check registry as it was, back after the test (a test's checks never reach another test)."""
    before = dict(Check._registry)
    yield
    Check._registry.clear()
    Check._registry.update(before)
    Check._ordered.clear()
    for name in [n for n in sys.modules if n.startswith("ufuzz_test_")]:
        sys.modules.pop(name)


def test_a_check_added_as_one_module_is_judged_counted_and_embedded(tmp_path, monkeypatch, registry):
    _registered(tmp_path, monkeypatch, "ufuzz_test_duplicate_check", _NEW_CHECK)
    ex = Execution("x1", "k", "q", top_ids=["m1", "m2", "m1"], top_scores=[0.9, 0.8, 0.7])
    ref = Reference("q1", "Lyon", supporting=("m1",))
    got = selection(ref, ex)
    assert (got.passed, got.kind, got.offending) == (False, "duplicate_result", ("m1",))
    assert could_fail(_case(), Reference("q1", None, abstain=True), False, Context(visible=True))
    theirs = _embedded("ufuzz_test_verdict").selection(ref, ex)
    assert (theirs.passed, theirs.kind, theirs.offending) == (False, "duplicate_result", ("m1",))


_STRICTER = '''"""stale_answer, also blamed when the stale value is only in the retrieved memories."""

from __future__ import annotations

from ufuzz.oracles.checks.stale_answer import StaleAnswer


class StricterStale(StaleAnswer):
    name = "stale_answer"
    order = 15
'''


def test_a_check_that_replaces_a_built_in_by_deriving_from_it_is_embedded_with_its_ancestor(tmp_path, monkeypatch,
                                                                                           registry):
    _registered(tmp_path, monkeypatch, "ufuzz_test_stricter_stale", _STRICTER)
    assert [c.name for c in checks_of(RESPONSE)] == ["false_abstention", "stale_answer", "unsupported_answer",
                                                    "wrong_answer"]
    assert type(checks_of(RESPONSE)[1]).__name__ == "StricterStale"
    names = oracle_checks.modules()
    assert names.index("ufuzz.oracles.checks.stale_answer") < names.index("ufuzz_test_stricter_stale")
    embedded = _embedded("ufuzz_test_verdict_stricter")  # no NameError: the ancestor's module comes first
    assert [type(c).__name__ for c in embedded.checks_of(RESPONSE)][1] == "StricterStale"


def test_an_entry_point_that_is_not_the_check_it_names_is_refused(tmp_path, monkeypatch, registry):
    _registered(tmp_path, monkeypatch, "ufuzz_test_misnamed", _NEW_CHECK)
    from ufuzz import plugins

    monkeypatch.setattr(plugins, "entry_point_specs",
                        lambda group: {"stale_answer": "ufuzz_test_misnamed:DuplicateResult"})
    monkeypatch.setattr(Check, "_loader", oracle_checks._load_entry_points)
    with pytest.raises(TypeError, match="is not a check: a Check subclass whose name is 'stale_answer'"):
        checks_of(SELECTION)


def test_each_built_in_check_module_defines_only_its_check():
    """The reproducer runs every check module's code in one namespace: a helper of one would replace another's."""
    import ast
    import inspect

    for name in oracle_checks.modules():
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        defined = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom, ast.Expr))]
        assert len(defined) == 1 and isinstance(defined[0], ast.ClassDef), name
