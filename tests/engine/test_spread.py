"""The search for large suites (SchedulerConfig.spread, ufuzz.engine.cover): invariants by property tests, and
the behaviour that motivates it on fixed examples."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.outcomes import outcome
from ufuzz.engine.cover import cover_order
from ufuzz.engine.scheduler import Scheduler, SchedulerConfig, StepOutcome

OPS = ("paraphrase", "target_change", "unsupported", "update", "delete", "unrelated_edit")

seeds_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(["a", "b", "c", "d"])), min_size=0, max_size=8,
             unique=True),
    min_size=1, max_size=8)
reach_strategy = st.lists(st.frozensets(st.sampled_from([f"m{i}" for i in range(12)]), max_size=4), min_size=8,
                          max_size=8)


def build(seed_moves, rng_seed=0, reach=None, **cfg) -> Scheduler:
    s = Scheduler(random.Random(rng_seed), SchedulerConfig(spread=True, **cfg))
    for i, moves in enumerate(seed_moves):
        r = reach[i] if reach else frozenset()
        s.add_seed(f"s{i}", f"s{i}", list(moves), reach=frozenset(f"cp{i % 2}/{m}" for m in r), group=f"cp{i % 2}")
    s.seal()
    return s


# -- the cover order -----------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(reach_strategy, st.integers(0, 3))
def test_cover_order_is_a_permutation_whose_first_round_covers_everything(reach, groups):
    items = [(f"s{i}", f"g{i % (groups + 1)}", r) for i, r in enumerate(reach)]
    order = cover_order(items)
    assert sorted(order) == sorted(k for k, _, _ in items)
    by = {k: r for k, _, r in items}
    everything = set().union(*reach)
    covered: set[str] = set()
    for k in order:  # the first seeds, while they add something, each add at least one new memory ...
        if by[k] - covered:
            covered |= by[k]
        else:
            break
    assert covered == everything  # ... and between them expect to reach every memory any seed does
    if everything:  # the first seed is one that expects the most
        assert len(by[order[0]]) == max(len(r) for r in reach)


def test_cover_order_spreads_over_checkpoints_on_ties():
    items = [(f"a{i}", "A", frozenset({f"A/m{i}"})) for i in range(3)] + \
            [(f"b{i}", "B", frozenset({f"B/m{i}"})) for i in range(3)]
    order = cover_order(items)
    assert [k[0] for k in order] == ["a", "b", "a", "b", "a", "b"]


def test_cover_order_prefers_the_seed_that_reaches_most_new_memory():
    items = [("small", "A", frozenset({"m1"})), ("big", "A", frozenset({"m1", "m2", "m3"})),
             ("other", "A", frozenset({"m4"})), ("dup", "A", frozenset({"m2"}))]
    assert cover_order(items) == ["big", "other", "small", "dup"]  # dup and small add nothing: the next round


# -- the scheduler in spread mode ----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seeds_strategy, st.integers(0, 20), reach_strategy,
       st.lists(st.sampled_from(["valid", "effect", "final", "retry"]), min_size=300, max_size=300))
def test_spread_keeps_the_obligation_invariants(seed_moves, rng_seed, reach, outcomes):
    """Each obligation at most ``attempts`` times in phase 1, never again once covered or finally rejected,
    the same schedule for the same seed."""
    def trace():
        s = build(seed_moves, rng_seed, reach, attempts=2)
        tried: dict[str, int] = {}
        done: set[str] = set()
        out = []
        for step in range(300):
            task = s.next()
            if task is None:
                break
            key = task.obligation.key
            if task.phase == 1:
                assert key not in done, f"{key} scheduled again after it was covered or closed"
                tried[key] = tried.get(key, 0) + 1
                assert tried[key] <= 2
            kind = outcomes[step]
            s.report(task, outcome(kind in ("valid", "effect"), final=kind == "final", coverage_gain=kind == "effect"))
            if kind in ("valid", "effect", "final"):
                done.add(key)
            out.append((task.case_id, task.operator, task.target, task.phase))
        return out
    assert trace() == trace()


@settings(max_examples=60, deadline=None)
@given(seeds_strategy, st.integers(0, 20), reach_strategy)
def test_without_feedback_every_seed_is_started_before_any_gets_a_second_visit(seed_moves, rng_seed, reach):
    s = build(seed_moves, rng_seed, reach, use_effect=False, visit=2)
    with_obligations = {f"s{i}" for i, m in enumerate(seed_moves) if m}
    count: dict[str, int] = {}
    for _ in range(200):
        task = s.next()
        if task is None or task.phase == 2:
            break
        count[task.case_id] = count.get(task.case_id, 0) + 1
        if count[task.case_id] > 2:
            assert set(count) == with_obligations, "a seed got a second visit before every seed had its first"
        s.report(task, StepOutcome(True))


@settings(max_examples=60, deadline=None)
@given(seeds_strategy, st.integers(0, 20), st.integers(0, 5))
def test_spread_retired_case_gets_no_more_tasks(seed_moves, rng_seed, when):
    s = build(seed_moves, rng_seed)
    retired: set[str] = set()
    for step in range(150):
        task = s.next()
        if task is None:
            break
        assert task.case_id not in retired
        if step == when:
            s.retire(task.case_id)
            retired.add(task.case_id)
        s.report(task, StepOutcome(step % 2 == 0, retained=step % 3 == 0, new_case_id=f"m{step}",
                                   moves=[("paraphrase", "x")]))


def _run(reports_effect, seeds=60, steps=240, **cfg) -> dict[str, int]:
    """Tasks per operator when ``reports_effect(operator)`` says whether its mutants change retrieval."""
    moves = [[(op, t) for op in ("paraphrase", "unrelated_edit") for t in "abcd"] for _ in range(seeds)]
    s = build(moves, 3, **{"warmup": 0, **cfg})
    per: dict[str, int] = {}
    for _ in range(steps):
        task = s.next()
        if task is None:
            break
        per[task.operator] = per.get(task.operator, 0) + 1
        s.report(task, outcome(True, coverage_gain=int(reports_effect(task.operator))))
    return per


def test_an_operator_that_never_changes_anything_stops_eating_the_budget():
    per = _run(lambda op: op == "paraphrase")
    assert per["unrelated_edit"] < 0.1 * sum(per.values())
    # the same campaign without feedback splits the budget evenly
    even = _run(lambda op: op == "paraphrase", use_effect=False)
    assert even["unrelated_edit"] > 0.4 * sum(even.values())


def test_the_rates_count_only_after_the_warmup():
    """Before ``warmup`` mutants were judged every operator is drawn as untried: a campaign starts broad, as the
    blind first batch of a batched one does; after it, the operator that changes nothing stops eating the budget."""
    early = _run(lambda op: op == "paraphrase", steps=60, warmup=60)
    assert early["unrelated_edit"] > 0.4 * sum(early.values())
    late = _run(lambda op: op == "paraphrase", steps=600, warmup=60)
    assert late["unrelated_edit"] < 0.25 * sum(late.values())


def test_an_operator_that_cannot_be_judged_stops_eating_visits():
    moves = [[(op, t) for op in ("paraphrase", "delete") for t in "abcd"] for _ in range(60)]
    s = build(moves, 3, warmup=0)
    per: dict[str, int] = {}
    for _ in range(200):
        task = s.next()
        per[task.operator] = per.get(task.operator, 0) + 1
        # a delete's mutant can never be judged here: a final rejection, no execution
        s.report(task, outcome(task.operator == "paraphrase", final=task.operator == "delete",
                               divergence=0.3 if task.operator == "paraphrase" else None))
    assert per["delete"] < 0.1 * sum(per.values())
    assert s.yield_rate("delete") <= 0.2 < 0.5 < s.yield_rate("paraphrase")


def test_spread_starts_more_seeds_than_the_walk_within_the_same_tasks():
    moves = [[(op, t) for op in OPS for t in "ab"] for _ in range(40)]
    walk = Scheduler(random.Random(1), SchedulerConfig())
    for i, m in enumerate(moves):
        walk.add_seed(f"s{i}", f"s{i}", m)
    walk.seal()
    spread = build(moves, 1)
    started = []
    for s in (walk, spread):
        seen = set()
        for _ in range(60):
            t = s.next()
            seen.add(t.case_id)
            s.report(t, outcome(True, coverage_gain=1))
        started.append(len(seen))
    assert started[0] <= 6 and started[1] >= 25


def test_after_the_first_round_visits_go_where_rewordings_move_the_ranking():
    moves = [[("paraphrase", t) for t in "abcdefgh"] for _ in range(20)]
    s = build(moves, 4, visit=1)
    later: dict[str, int] = {}
    for step in range(120):
        task = s.next()
        if step >= 20:  # the first round: every seed once
            later[task.case_id] = later.get(task.case_id, 0) + 1
        # seed s0's rewordings move its ranking a lot, the others' hardly
        div = 0.6 if task.case_id == "s0" else 0.02
        s.report(task, outcome(True, divergence=div, meaning_preserving=True))
    assert s.instability("s0") > 0.5 > 0.1 > s.instability("s1")
    assert later.get("s0", 0) == 7  # every open obligation of s0 (8, one in the first round) went first
    assert sum(later.values()) == 100


def test_auto_decides_at_seal_by_obligations_against_the_budget():
    moves = [[("paraphrase", "a"), ("update", "b")], [("delete", "c")], [("paraphrase", "d")]]  # 4 obligations
    for budget, spreads in ((3, True), (4, False), (None, False)):
        s = Scheduler(random.Random(0), SchedulerConfig(spread=None))
        for i, m in enumerate(moves):
            s.add_seed(f"s{i}", f"s{i}", m)
        s.seal(budget=budget)
        assert s.config.spread is spreads, budget
        seen = set()
        while (t := s.next()) is not None and t.phase == 1 and len(seen) < 4:
            seen.add(t.obligation.key)
            s.report(t, StepOutcome(valid=True))
        assert len(seen) == 4  # either way every obligation is handed out


# -- in a campaign -------------------------------------------------------------------------------------------
def _campaign(tmp_path, name: str, budget: int, search: str, strategy: str = "full"):
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.strategies import apply_strategy

    cfg = apply_strategy(CampaignConfig(backend="embedded", backend_options={"db": "memory", "retrieval": "bm25"},
                                        budget=budget, seed=2, search=search, out=str(tmp_path / name)), strategy)
    c = Campaign(cfg)
    summary = c.run()
    parents = sum(1 for e in c.store.executions(c.campaign_id) if e.is_parent)
    return c, summary, parents


def test_auto_spreads_when_the_obligations_are_more_than_the_budget(tmp_path):
    # the shipped suite has 96 seeds and some 2,000 obligations: a budget of 150 spreads under auto, exactly as
    # --search spread does
    auto, a, _ = _campaign(tmp_path, "auto", 150, "auto")
    spread, s, _ = _campaign(tmp_path, "spread", 150, "spread")
    assert auto.spreads() is None and a["search"] == s["search"] == "spread"
    assert a["failures"] == s["failures"] and a["coverage"] == s["coverage"]
    assert [(m.case_id, m.valid) for m in auto.store.mutants(auto.campaign_id)] == \
        [(m.case_id, m.valid) for m in spread.store.mutants(spread.campaign_id)]
    # spreading starts far more seeds than the walk in the same budget
    small, sm, spread_parents = _campaign(tmp_path, "small", 80, "auto")
    assert sm["search"] == "spread"
    _, _, walk_parents = _campaign(tmp_path, "small-walk", 80, "walk")
    assert spread_parents >= 2 * walk_parents
    # the random baseline draws no phase 1: --search changes nothing in it
    _, r1, _ = _campaign(tmp_path, "r1", 80, "spread", "random")
    _, r2, _ = _campaign(tmp_path, "r2", 80, "walk", "random")
    assert r1["failures"] == r2["failures"] and r1["coverage"] == r2["coverage"]


def test_a_selection_for_an_unanswerable_question_is_its_operator_s_effect(tmp_path):
    """Wiring: with the backend's own relevance threshold, every unsupported question that got memories selected
    counts as an effect of its operator (its yield), and without a threshold no unsupported question is judged
    at all, so it has no tries."""
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    def run(name: str, options: dict) -> Campaign:
        cfg = CampaignConfig(backend="embedded", backend_options={"db": "memory", "retrieval": "bm25", **options},
                             budget=40, seed=3, operators=("unsupported",), out=str(tmp_path / name))
        c = Campaign(cfg)
        c.run()
        return c

    selecting = run("threshold", {"retrieval": "dense", "relevance_threshold": -1.0})  # every result selected
    tries = selecting.scheduler._tries["unsupported"]
    assert tries > 0 and selecting.scheduler._effects["unsupported"] == tries
    assert run("none", {}).scheduler._tries["unsupported"] == 0
