"""Feedback: coverage, and the signals (top-k novelty, hidden-retrieval response novelty, divergence, unexpected
selection) read per execution and combined for the scheduler; ablation."""

from __future__ import annotations

import threading
from collections.abc import Collection

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.outcomes import outcome
from ufuzz.backends.protocol import OpResult
from ufuzz.engine import signals
from ufuzz.engine.feedback import NO_FEEDBACK, FeedbackState, expected_top, normalize_response, response_hash
from ufuzz.engine.rbo import rbo_ext
from ufuzz.model import Checkpoint, Execution, Memory, StateOp


def ex(top: list[str], response: str | None = "ok", *, error: str | None = None, abstained: bool = False,
       case_id: str = "c") -> Execution:
    return Execution(case_id=case_id, state_key="s", query="q", top_ids=list(top),
                     top_scores=[1.0 / (i + 1) for i in range(len(top))], response=response,
                     abstained=abstained, error=error)


def checkpoint(cid: str, n: int) -> Checkpoint:
    return Checkpoint(id=cid, memories=tuple(Memory(f"m{i}", f"text {i}", f"2024-01-{i + 1:02d}")
                                             for i in range(n)), facts=())


BUILT_IN = ("coverage", "unexpected", "novelty", "divergence")


def built_in(off: Collection[str] = ()) -> FeedbackState:
    """A feedback state guided by the built-in signals but ``off`` (any other installed one is switched off: these
    tests are about the built-ins)."""
    return FeedbackState(set(off) | (set(signals.names()) - set(BUILT_IN)))


# ---------------------------------------------------------------- examples


def test_first_observation_gains_coverage_and_signature() -> None:
    fs = built_in()
    fb = fs.observe("s1", "cp", ex(["m1", "m2"]), None, False, 0.9)
    assert fb.values == {"coverage": 2, "unexpected": False, "novelty": True, "divergence": None} and fb.retained
    assert fs.coverage_of("cp").reached == 2


def test_reordering_is_a_new_signature_but_no_coverage() -> None:
    fs = built_in()
    fs.observe("s1", "cp", ex(["m1", "m2"]), None, False, 0.9)
    fb = fs.observe("s1", "cp", ex(["m2", "m1"]), None, False, 0.9)
    assert fb.values.get("coverage", 0) == 0 and fb.values.get("novelty", False) and fb.retained


def test_signatures_are_per_seed_and_coverage_per_checkpoint() -> None:
    fs = built_in()
    fs.observe("s1", "cp", ex(["m1"]), None, False, 0.9)
    other_seed = fs.observe("s2", "cp", ex(["m1"]), None, False, 0.9)
    assert other_seed.values.get("coverage", 0) == 0 and other_seed.values.get("novelty", False)
    other_cp = fs.observe("s2", "cp2", ex(["m1"]), None, False, 0.9)
    assert other_cp.values.get("coverage", 0) == 1 and not other_cp.values.get("novelty", False)
    assert fs.covered() == {("cp", "m1"), ("cp2", "m1")}


def test_divergence_is_one_minus_rbo_ext_against_parent() -> None:
    fs = built_in()
    parent = ex(["m1", "m2", "m3"])
    child = ex(["m2", "m1", "m4"])
    fb = fs.observe("s1", "cp", child, parent, False, 0.8)
    assert fb.values.get("divergence") == pytest.approx(1 - rbo_ext(parent.top_ids, child.top_ids, 0.8))
    assert 0 < fb.values.get("divergence") < 1
    same = fs.observe("s1", "cp", ex(["m2", "m1", "m4"]), ex(["m2", "m1", "m4"]), False, 0.8)
    assert same.values.get("divergence") == pytest.approx(0.0, abs=1e-12)
    assert not same.retained  # divergence never retains on its own


def test_a_state_mutant_diverges_only_from_what_its_operation_predicts() -> None:
    """A delete that removes the memory it deleted (the rest moving up) changes nothing unexpected; an update whose
    old version keeps its place, or stays above the new one, does; so does an edit whose memory enters the top-k."""
    parent = ["a", "e", "b", "c", "d"]
    delete = (StateOp("delete", "e"),), (OpResult("delete", True, "e", removed=("e",)),)
    assert expected_top(parent, *delete) == ["a", "b", "c", "d"]
    fs = built_in()
    moved_up = fs.observe("s", "cp", ex(["a", "b", "c", "d", "f"]), ex(parent), expected=expected_top(parent, *delete))
    assert moved_up.values.get("divergence") == pytest.approx(0.0, abs=1e-12)
    assert fs.observe("s", "cp", ex(["a", "b", "c", "d", "f"]), ex(parent)).values.get("divergence") > 0  # from the parent's
    update = (StateOp("update", "e"),), (OpResult("update", True, "e", written=("e2",), superseded=("e",)),)
    assert expected_top(parent, *update) == ["a", "e2", "b", "c", "d"]
    in_place = fs.observe("s", "cp", ex(["a", "e2", "b", "c", "d"]), ex(parent), expected=expected_top(parent, *update))
    stale_above = fs.observe("s", "cp", ex(["a", "e", "e2", "b", "c"]), ex(parent),
                             expected=expected_top(parent, *update))
    assert in_place.values.get("divergence") == pytest.approx(0.0, abs=1e-12) and stale_above.values.get("divergence") > 0
    add = (StateOp("add"),), (OpResult("add", True, written=("x",)),)
    assert expected_top(parent, *add) == parent
    entered = fs.observe("s", "cp", ex(["a", "x", "e", "b", "c"]), ex(parent), expected=expected_top(parent, *add))
    assert entered.values.get("divergence") > 0


def test_an_effect_is_what_the_mutation_did_not_say_it_would_do() -> None:
    """A target change's new ranking is its design: only memories reached for the first time count for it."""
    assert outcome(divergence=0.4).effect
    assert not outcome(divergence=0.0, retained=True).effect
    assert not outcome(divergence=0.9, asks_anew=True).effect
    assert outcome(divergence=0.9, coverage_gain=2, asks_anew=True).effect
    assert not outcome(divergence=1.1e-16).effect  # equal rankings within a rounding error
    assert outcome(divergence=None, retained=True).effect  # hidden retrieval: a new response
    assert not outcome(divergence=None, retained=False).effect
    # a question the memory cannot support that got memories selected did what its operation said it would not
    assert outcome(divergence=0.9, asks_anew=True, unexpected=True).effect
    assert outcome(divergence=0.0, unexpected=True).effect


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5), st.one_of(st.none(), st.floats(0.0, 1.0)), st.booleans(), st.booleans(), st.booleans(),
       st.booleans())
def test_the_signals_give_the_scheduler_the_energy_effect_and_instability_of_its_rule(gain, div, mp, anew, unexpected,
                                                                                      kept):
    """The scheduler's rule before the signals were modules, written out: energy 1 + gain + twice a
    meaning-preserving mutant's divergence; an effect where memories were reached first or selected unexpectedly,
    else — not for a question asked anew — where the ranking moved beyond noise, else (none measured) where the
    mutant was kept; instability the divergence of a meaning-preserving mutant."""
    got = outcome(coverage_gain=gain, divergence=div, meaning_preserving=mp, asks_anew=anew, unexpected=unexpected,
                  retained=kept)
    energy = 1.0 + float(gain)
    if mp and div is not None:
        energy += 2.0 * div
    if gain > 0 or unexpected:
        effect = True
    elif anew:
        effect = False
    else:
        effect = kept if div is None else div > 1e-9
    assert (got.energy, got.effect, got.instability) == (energy, effect, div if mp else None)


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.floats(0.0, 1.0), max_size=8), threshold=st.none() | st.floats(0.0, 1.0),
       unanswerable=st.booleans())
def test_an_unanswerable_question_s_effect_is_a_selection_at_the_backend_s_own_threshold(
        scores: list[float], threshold: float | None, unanswerable: bool) -> None:
    """Only an operator that asks what the memory cannot support predicts an empty selection, and only a backend
    that declares a relevance threshold selects: anything at or above it contradicts the prediction."""
    from ufuzz.engine.signals import Observation
    from ufuzz.engine.signals.unexpected import Unexpected

    e = Execution(case_id="c", state_key="s", query="q", top_ids=[f"m{i}" for i in range(len(scores))],
                  top_scores=list(scores))
    want = unanswerable and threshold is not None and any(sc >= threshold for sc in scores)
    got = Unexpected().observe(Observation("s", "cp", e, unanswerable=unanswerable, threshold=threshold))
    assert got.value is want and got.effect is (True if want else None)


def test_the_operators_that_ask_what_memory_cannot_support_say_so() -> None:
    from ufuzz.operators import registry

    assert {n for n, cls in registry.classes().items() if cls.unanswerable} == {"unsupported", "speaker_swap"}


def test_divergence_none_without_parent_errored_parent_or_hidden() -> None:
    fs = built_in()
    assert fs.observe("s", "cp", ex(["m1"]), None, False, 0.9).values.get("divergence") is None
    assert fs.observe("s", "cp", ex(["m1"]), ex([], error="boom"), False, 0.9).values.get("divergence") is None
    assert fs.observe("s", "cp", ex([]), ex(["m1"]), True, 0.9).values.get("divergence") is None


def test_divergence_alone_does_not_retain() -> None:
    fs = built_in()
    fs.observe("s", "cp", ex(["m1", "m2"]), None, False, 0.9)
    fs.observe("s", "cp", ex(["m9"]), None, False, 0.9)
    fb = fs.observe("s", "cp", ex(["m9"]), ex(["m1", "m2"]), False, 0.9)
    assert fb.values.get("divergence") == pytest.approx(1.0)
    assert not fb.retained


def test_errored_execution_gives_no_feedback_and_changes_nothing() -> None:
    fs = built_in()
    fb = fs.observe("s", "cp", ex(["m1"], error="BackendError: down"), None, False, 0.9)
    assert fb is NO_FEEDBACK and not fb.retained
    assert fs.coverage_of("cp").reached == 0
    assert fs.totals()["errored"] == 1 and fs.totals()["observed"] == 0
    # The same top-k without the error is still new afterwards.
    assert fs.observe("s", "cp", ex(["m1"]), None, False, 0.9).retained


def test_hidden_retrieval_uses_normalised_response_novelty() -> None:
    fs = built_in()
    first = fs.observe("s", "cp", ex([], "Paris."), None, True, 0.9)
    assert first.values == {"coverage": 0, "unexpected": False, "novelty": True, "divergence": None}
    assert first.retained
    again = fs.observe("s", "cp", ex([], "  paris "), None, True, 0.9)
    assert not again.values.get("novelty", False) and not again.retained
    other = fs.observe("s", "cp", ex([], "Lyon"), None, True, 0.9)
    assert other.values.get("novelty", False) and other.retained
    abstain = fs.observe("s", "cp", ex([], None, abstained=True), None, True, 0.9)
    assert abstain.values.get("novelty", False)
    assert fs.totals()["responses"] == 3
    # Hidden retrieval never touches coverage or signatures, even if ids leak into the execution.
    leaky = fs.observe("s", "cp", ex(["m1"], "Lyon"), None, True, 0.9)
    assert leaky.values.get("coverage", 0) == 0 and not leaky.values.get("novelty", False) and not leaky.retained
    assert fs.coverage_of("cp").reached == 0


def test_response_normalisation() -> None:
    assert normalize_response("  The  Answer:\tParis!! ") == "the answer: paris"
    assert normalize_response("ＰＡＲＩＳ") == "paris"  # NFKC folds full-width forms
    assert normalize_response(None) != normalize_response("")
    assert normalize_response("x", abstained=True) != normalize_response("x")
    assert response_hash("Paris") == response_hash("paris.")
    assert response_hash("Paris") != response_hash("Lyon")


def test_coverage_of_checkpoint_counts_totals_and_extra_ids() -> None:
    fs = built_in()
    cp = checkpoint("cp", 4)
    fs.observe("s", "cp", ex(["m0", "m1"]), None, False, 0.9)
    fs.observe("s", "cp", ex(["m1", "added-1"]), None, False, 0.9)
    cov = fs.coverage_of(cp)
    assert (cov.reached, cov.total, cov.extra) == (2, 4, 1)
    assert cov.ratio == 0.5
    assert fs.coverage_of("cp").reached == 3 and fs.coverage_of("cp").ratio is None
    assert fs.coverage_of(checkpoint("never", 2)).ratio == 0.0
    t = fs.totals()
    assert t["coverage"] == 3 and t["signatures"] == 2 and t["observed"] == 2 and t["retained"] == 2


def test_a_memory_a_mutant_wrote_is_no_coverage_gain_of_a_tracked_checkpoint() -> None:
    """An update's or an add's own memory in the top-k is what the operation says it does, not a memory of the
    checkpoint reached: it gains no coverage (and so retains nothing by itself); a checkpoint memory it brings up
    does. An untracked checkpoint has no membership to tell them apart: every new id counts, as before."""
    fs = built_in()
    fs.track([checkpoint("cp", 4)])
    fs.observe("s", "cp", ex(["m0", "m1"]), None, False, 0.9)
    written = fs.observe("s", "cp", ex(["m0", "m1~u1"]), None, False, 0.9)
    assert written.values.get("coverage", 0) == 0 and written.values.get("novelty", False)
    again = fs.observe("s", "cp", ex(["m0", "m1~u1"]), None, False, 0.9)
    assert not again.retained
    reached = fs.observe("s", "cp", ex(["m2", "m1~u2"]), None, False, 0.9)
    assert reached.values.get("coverage", 0) == 1
    assert fs.coverage_of(checkpoint("cp", 4)).extra == 2
    untracked = built_in()
    assert untracked.observe("s", "cq", ex(["m0", "m1~u1"]), None, False, 0.9).values["coverage"] == 2


def test_p_is_validated() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        built_in().observe("s", "cp", ex(["m1"]), ex(["m1"]), False, 1.0)


# ---------------------------------------------------------------- ablation


def test_ablate_coverage() -> None:
    fs = built_in({"coverage"})
    fs.observe("s", "cp", ex(["m1"]), None, False, 0.9)
    fb = fs.observe("s2", "cp", ex(["m1", "m2"]), None, False, 0.9)
    assert fb.values.get("coverage", 0) == 0  # m2 is new, but coverage is switched off
    assert fb.retained and fb.values.get("novelty", False)  # novelty still retains
    assert fs.coverage_of("cp").reached == 2  # what was reached is still measured


def test_ablate_novelty() -> None:
    fs = built_in({"novelty"})
    fs.observe("s", "cp", ex(["m1", "m2"]), None, False, 0.9)
    fb = fs.observe("s", "cp", ex(["m2", "m1"]), None, False, 0.9)
    assert not fb.values.get("novelty", False) and not fb.retained
    hidden = fs.observe("s", "cp", ex([], "new answer"), None, True, 0.9)
    assert not hidden.values.get("novelty", False) and not hidden.retained


def test_an_ablated_signal_still_measures_what_it_counts() -> None:
    """``no-novelty`` guides nothing by novelty, yet counts the distinct responses ``ufuzz bench`` reports where
    retrieval is hidden, as a full campaign does."""
    full, ablated = built_in(), built_in({"novelty"})
    for fs in (full, ablated):
        for answer in ("Paris", "paris", "Lyon"):
            fs.observe("s", "cp", ex([], answer), None, True, 0.9)
    assert full.totals()["responses"] == ablated.totals()["responses"] == 2


def test_ablate_divergence() -> None:
    fs = built_in({"divergence"})
    fb = fs.observe("s", "cp", ex(["m1"]), ex(["m2"]), False, 0.9)
    assert fb.values.get("divergence") is None and fb.retained


def test_all_signals_off_never_retains() -> None:
    fs = built_in({"coverage", "novelty", "divergence"})
    for top in (["m1"], ["m2", "m3"], ["m3", "m2"]):
        fb = fs.observe("s", "cp", ex(top), ex(["m1"]), False, 0.9)
        assert fb.values == {"unexpected": False} and not fb.retained and fb.energy == 1.0


# ---------------------------------------------------------------- properties

ids = st.sampled_from([f"m{i}" for i in range(8)])
topk = st.lists(ids, unique=True, max_size=5)
step = st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(["cpA", "cpB"]), topk,
                 st.one_of(st.none(), topk), st.booleans())


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=30), st.sampled_from([set(), {"divergence"}, {"coverage"}, {"novelty"}]))
def test_retained_iff_gain_or_new_signature_against_a_model(steps, off: set[str]) -> None:
    fs = built_in(off)
    model_cov: set[tuple[str, str]] = set()
    model_sigs: set[tuple[str, tuple[str, ...]]] = set()
    for seed, cp, top, parent_top, errored in steps:
        before = len(fs.covered())
        fb = fs.observe(seed, cp, ex(top, error="x" if errored else None),
                        None if parent_top is None else ex(parent_top), False, 0.9)
        if errored:
            assert fb is NO_FEEDBACK
            continue
        new_pairs = {(cp, m) for m in top} - model_cov
        new_sig = (seed, tuple(top)) not in model_sigs
        model_cov |= new_pairs
        model_sigs.add((seed, tuple(top)))
        assert fb.values.get("coverage", 0) == (len(new_pairs) if "coverage" not in off else 0)
        assert fb.values.get("novelty", False) == (new_sig and "novelty" not in off)
        assert fb.retained == (fb.values.get("coverage", 0) > 0 or fb.values.get("novelty", False))
        assert set(fb.values) == {"coverage", "unexpected", "novelty", "divergence"} - off
        if parent_top is None or "divergence" in off:
            assert fb.values.get("divergence") is None
        else:
            assert 0.0 <= fb.values.get("divergence") <= 1.0
        # Coverage is monotone and equals the model.
        assert len(fs.covered()) >= before
        assert fs.covered() == model_cov


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=20), step)
def test_same_execution_twice_never_retains_the_second_time(history, repeat) -> None:
    fs = built_in()
    for seed, cp, top, _parent, hidden in history:
        fs.observe(seed, cp, ex(top, response=" ".join(top)), None, hidden, 0.9)
    seed, cp, top, parent_top, hidden = repeat
    parent = None if parent_top is None else ex(parent_top)
    fs.observe(seed, cp, ex(top, response=" ".join(top)), parent, hidden, 0.9)
    second = fs.observe(seed, cp, ex(top, response=" ".join(top)), parent, hidden, 0.9)
    assert not second.retained
    assert second.values.get("coverage", 0) == 0 and not second.values.get("novelty", False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["cpA", "cpB"]), topk), max_size=25))
def test_coverage_counts_are_monotone(observations) -> None:
    fs = built_in()
    cps = {"cpA": checkpoint("cpA", 8), "cpB": checkpoint("cpB", 8)}
    last = {k: 0 for k in cps}
    for cp, top in observations:
        fs.observe("s", cp, ex(top), None, False, 0.9)
        for k, c in cps.items():
            now = fs.coverage_of(c).reached
            assert now >= last[k]
            assert now <= 8
            last[k] = now
    assert sum(last.values()) == fs.totals()["coverage"]


def test_concurrent_observers_count_each_pair_once() -> None:
    fs = built_in()
    gains: list[int] = []
    lock = threading.Lock()

    def worker(offset: int) -> None:
        for i in range(200):
            fb = fs.observe(f"s{offset}", "cp", ex([f"m{(i + offset) % 50}"]), None, False, 0.9)
            with lock:
                gains.append(fb.values.get("coverage", 0))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(gains) == 50 == fs.coverage_of("cp").reached


def test_a_state_mutant_that_removed_the_whole_top_k_contradicts_no_ranking():
    """Its predicted ranking is empty — the prefix of any ranking — so what moved up into the emptied places is no
    divergence (a delete of every memory ranked is not an effect by its ranking; new memories reached still are)."""
    state = built_in()
    parent = Execution(case_id="p", state_key="k", query="q", top_ids=["a", "b"], top_scores=[0.9, 0.8])
    child = Execution(case_id="c", state_key="k2", query="q", top_ids=["c", "d"], top_scores=[0.7, 0.6])
    assert state.observe("s", "cp", child, parent, expected=[]).values.get("divergence") == 0.0
    assert state.observe("s", "cp", child, parent, expected=["a"]).values.get("divergence") > 0.0
    assert state.observe("s", "cp", child, parent).values.get("divergence") > 0.0  # a query mutant compares with the parent's own


def test_a_state_that_ranks_what_its_parent_ranked_nothing_of_has_changed():
    """An empty prediction is no divergence only where the parent ranked something (every memory of it deleted);
    where the parent ranked nothing, a state mutant that now ranks a memory diverges."""
    state = built_in()
    empty = Execution(case_id="p", state_key="k", query="q", top_ids=[], top_scores=[])
    child = Execution(case_id="c", state_key="k2", query="q", top_ids=["a"], top_scores=[0.7])
    assert state.observe("s", "cp", child, empty, expected=[]).values.get("divergence") == 1.0


@settings(max_examples=300, deadline=None)
@given(parent=st.one_of(st.none(), topk), child=topk, expected=st.one_of(st.none(), topk), mp=st.booleans(),
       anew=st.booleans(), unanswerable=st.booleans(), threshold=st.one_of(st.none(), st.floats(0.0, 1.0)),
       kept=st.booleans(), hidden=st.booleans(), p=st.sampled_from([0.5, 0.9]))
def test_the_real_signals_give_the_scheduler_its_rule(parent, child, expected, mp, anew, unanswerable, threshold,
                                                       kept, hidden, p) -> None:
    """Through the real signals, one execution on a fresh state: energy 1 + memories reached first + twice a
    meaning-preserving mutant's divergence from the ranking its mutation predicts; an effect where memories were
    reached first or selected for a question the memory cannot support, else — not for a question asked anew — where
    the ranking moved beyond noise, else (none measured) where the mutant was kept; instability a meaning-preserving
    mutant's divergence (the rule the scheduler applied itself before the signals were modules)."""
    from ufuzz.engine.rbo import rbo_divergence

    fs = built_in()
    fs.track([checkpoint("cp", 6)])  # m0 … m5 are the checkpoint's; m6, m7 a mutation's own writes
    child_ex, parent_ex = ex(child, " ".join(child)), None if parent is None else ex(parent)
    fb = fs.observe("s", "cp", child_ex, parent_ex, hidden, p, expected, meaning_preserving=mp,
                    unanswerable=unanswerable, threshold=threshold)
    gain = 0 if hidden else len({m for m in child if m in {f"m{i}" for i in range(6)}})
    div = None
    if not hidden and parent is not None:
        before = parent if expected is None else expected
        div = 0.0 if expected is not None and parent and not before else rbo_divergence(before, child, p)
    selected = unanswerable and threshold is not None and any(s >= threshold for s in child_ex.top_scores)
    energy = 1.0 + float(gain)
    if mp and div is not None:
        energy += 2.0 * div
    effect = True if gain > 0 or selected else False if anew else kept if div is None else div > 1e-9
    assert (fb.energy, fb.effect(asks_anew=anew, kept=kept), fb.instability) == (energy, effect,
                                                                                   div if mp else None)
    assert fb.retained  # the seed's first ranking, or first response, is new
