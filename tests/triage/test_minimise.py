"""Delta debugging (ddmin) and `ufuzz minimise` on real failures of the embedded backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ufuzz.cli import main
from ufuzz.corpus.campaign import load_campaign
from ufuzz.oracles.judging import Judging
from ufuzz.triage.check import check_corpus
from ufuzz.triage.corpusfile import load_corpus
from ufuzz.triage.minimise import _Trial, ddmin, minimise_failure
from ufuzz.triage.replay import fresh_backend


@given(st.lists(st.integers(0, 40), unique=True, max_size=25), st.data())
def test_ddmin_finds_exactly_the_needed_items(items, data):
    """For a monotone test ("holds when every needed item is present"), ddmin returns the needed items."""
    needed = set(data.draw(st.lists(st.sampled_from(items), unique=True))) if items else set()
    calls: list[list[int]] = []

    def test(sub: list[int]) -> bool:
        calls.append(sub)
        return needed <= set(sub)

    out = ddmin(items, test)
    assert set(out) == needed
    assert out == [x for x in items if x in needed]  # order kept
    assert all(set(c) <= set(items) for c in calls)


@given(st.lists(st.integers(0, 30), unique=True, min_size=2, max_size=20), st.integers(0, 30))
def test_ddmin_result_is_one_minimal_for_any_test(items, seed):
    """Whatever the test (here: an arbitrary but fixed set of passing subsets), removing any single item of
    ddmin's answer makes the test fail — unless the budget ran out."""
    import random

    rnd = random.Random(seed)
    memo: dict[frozenset[int], bool] = {frozenset(items): True}

    def test(sub: list[int]) -> bool:
        return memo.setdefault(frozenset(sub), rnd.random() < 0.5)

    out = ddmin(items, test)
    assert test(out)
    for x in out:
        assert not test([y for y in out if y != x])


def test_ddmin_respects_its_budget():
    calls = []
    out = ddmin(list(range(50)), lambda s: calls.append(s) or True, budget=3)
    assert len(calls) == 3 and len(out) < 50


@pytest.fixture(scope="module")
def campaign(small_campaign):
    return Path(small_campaign.config.out)


def _pick(data, kind: str | None = None):
    for f in data.failures:
        if f.origin == "mutant" and f.counts and (kind is None or f.kind == kind):
            return f
    # the shared small campaign is deterministic (seed 3, budget 400) and finds both: a campaign that no longer
    # does has lost failures, which is itself a regression to look at, not a reason to test nothing
    raise AssertionError(f"the small campaign found no {kind or 'mutant'} failure")


def test_minimise_keeps_the_failure_and_is_one_minimal(campaign, tmp_path):
    data = load_campaign(campaign)
    f = _pick(data, "stale_ranked_above_valid")
    res = minimise_failure(data, f.failure_key[:10])
    assert res.record.failure_key == f.failure_key and res.record.kind == f.kind
    assert res.memories_after < res.memories_before and res.tests >= 1
    # the minimised pair still fails the same way on a fresh backend, and dropping any one remaining memory
    # that no reference or op names loses the failure
    with fresh_backend(data.backend, data.backend_options) as be:
        trial = _Trial(be, res.record, res.checkpoint, res.descriptor, data.k, Judging.of(data.config))
        ops = tuple(range(len(res.record.mutant.ops)))
        keep = {m.id for m in res.checkpoint.memories}
        assert trial.shows_failure(keep, ops)
        named = set(res.record.offending) | {i for s in (res.record.parent, res.record.mutant)
                                             for i in (*s.reference.supporting, *s.reference.invalidated)}
        named |= {o.target for o in res.record.mutant.ops if o.target}
        for m in keep - named:
            assert not trial.shows_failure(keep - {m}, ops), m


def test_minimised_record_is_a_corpus_that_check_accepts(campaign, tmp_path):
    data = load_campaign(campaign)
    f = _pick(data)
    out = tmp_path / "min.jsonl"
    r = CliRunner().invoke(main, ["minimise", str(campaign), f.failure_key[:12], "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "memories" in r.output and f"ufuzz corpus check {out}" in r.output
    rc = load_corpus(out)
    assert len(rc.records) == 1 and rc.records[0].failure_key == f.failure_key
    assert rc.header["minimised"]["memories"]["after"] == len(next(iter(rc.checkpoints.values())).memories)
    rep = check_corpus(rc)
    assert rep.ok and rep.exit_code == 0, rep.results
    head = json.loads(out.read_text().splitlines()[0])
    assert head["generator"].startswith("ufuzz minimise") and head["judging"] == Judging.of(data.config).to_dict()


def test_minimise_bad_input(campaign, tmp_path):
    r = CliRunner().invoke(main, ["minimise", str(campaign), "zzzz"])
    assert r.exit_code == 2 and "no failure with key 'zzzz'" in r.output
    r = CliRunner().invoke(main, ["minimise", str(tmp_path / "nope"), "abc"])
    assert r.exit_code == 2 and "no such campaign directory" in r.output
