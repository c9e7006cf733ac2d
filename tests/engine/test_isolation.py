"""Executor isolation: writes of a mutant never reach its parent, a sibling, or the checkpoint state.

State operators run through ``Executor.fork`` on forks of a depth-1 parent (itself a state mutant of a
seed), on forks of its siblings and on a fork of a fork, for every embedded update/delete policy; get/list and
retrieval are compared before and after. The non-copyable path (rebuild + replay) must isolate the same way
and give the same rankings as native copies.
"""

from __future__ import annotations

import pytest

from tests.support.operator_kit import (
    POLICIES,
    NonCopyableBackend,
    case_of,
    child_of,
    embedded,
    operators,
    reference,
    rng,
    seed_by_id,
    snapshot,
    suite,
)
from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.engine.executor import Executor
from ufuzz.operators import StateView

SEED = "p1-s1"  # Kaito's employer; the checkpoint has unrelated memories and facts of other entities
K = 8


def _rank(be, handle, query: str) -> list[tuple[str, float]]:
    return [(r.id, r.score) for r in be.retrieve(handle, query, K)]


def _scenario(be) -> dict:
    """Parent P (seed + unrelated add), siblings A (update) and B (delete all) of P, C (unrelated edit) on a
    fork of A; returns every state's get/list snapshot and rankings, before and after the writes."""
    ex = Executor(be, suite().checkpoints, k=K)
    ops = operators()
    seed = case_of(seed_by_id(SEED))
    # P: a retained state mutant of the seed, adopted by the executor as the campaign does
    hp = ex.fork(seed)
    mp = ops["unrelated_edit"].mutate(seed, reference(seed), "add", rng("P"), StateView(be, hp))
    assert ops["unrelated_edit"].validate(seed, mp, StateView(be, hp)).ok
    parent = child_of(seed, mp, ops["unrelated_edit"], "P")
    ex.adopt(parent, hp)
    base = ex.state_of(seed)
    queries = [seed.query.text, "Which company employs Kaito now?",
               *[t for _, t in seed.provenance.memory_texts][:4]]
    before = {name: (snapshot(StateView(be, h)), {q: _rank(be, h, q) for q in queries})
              for name, h in (("base", base), ("parent", ex.state_of(parent)))}

    ha, hb = ex.fork(parent), ex.fork(parent)
    ma = ops["update"].mutate(parent, reference(seed), ops["update"].targets(parent)[0], rng("A"),
                              StateView(be, ha))
    assert ops["update"].validate(parent, ma, StateView(be, ha)).ok
    a = child_of(parent, ma, ops["update"], "A")
    sib_b_before = snapshot(StateView(be, hb))
    mb = ops["delete"].mutate(parent, reference(seed), "all", rng("B"), StateView(be, hb))
    assert ops["delete"].validate(parent, mb, StateView(be, hb)).ok
    assert snapshot(StateView(be, ha)) != sib_b_before  # A was written ...
    # ... and B saw none of it, A sees none of B's delete
    new_text = ma.ops[0].memory.text
    new_id = ma.results[0].written[0]
    deleted_b = {o.target for o in mb.ops}
    assert new_text not in {m.text for m in StateView(be, hb).list()}
    for mid in deleted_b:
        got = be.get(ha, mid)
        assert got is not None and got.active, f"B's delete of {mid} reached sibling A"

    ex.adopt(a, ha)  # A is retained: its state is forked for the next generation
    hc = ex.fork(a)
    mc = ops["unrelated_edit"].mutate(a, ma.reference, "delete", rng("C"), StateView(be, hc))
    assert ops["unrelated_edit"].validate(a, mc, StateView(be, hc)).ok
    c = child_of(a, mc, ops["unrelated_edit"], "C")
    gone_c = {o.target for o in mc.ops}

    after = {name: (snapshot(StateView(be, h)), {q: _rank(be, h, q) for q in queries})
             for name, h in (("base", base), ("parent", ex.state_of(parent)))}
    assert after == before, "a write of a mutant reached its parent or the checkpoint state"
    # A still holds what C deleted; B holds neither A's nor C's writes
    for mid in gone_c:
        assert be.get(ha, mid) is not None and be.get(ha, mid).active
        assert be.get(hc, mid) is None or not be.get(hc, mid).active
    # retrieval agrees: the updated text is retrieved in A (and C), never in P, B or the base
    for name, h in (("A", ha), ("C", hc)):
        top = be.retrieve(h, new_text, K)
        assert (top[0].id, top[0].text) == (new_id, new_text), name
    for name, h in (("B", hb), ("P", ex.state_of(parent)), ("base", base)):
        assert new_text not in {m.text for m in be.list(h)}, name
        assert new_text not in {r.text for r in be.retrieve(h, new_text, K)}, name
    # a deleted memory is retrieved by its own text in P and A but not in B
    victim = sorted(deleted_b)[0]
    victim_text = dict(seed.provenance.memory_texts)[victim]
    assert victim in [i for i, _ in _rank(be, ex.state_of(parent), victim_text)]
    assert victim not in [i for i, _ in _rank(be, hb, victim_text)]

    # the recipe of C reproduces C's state from scratch (what the non-copyable path relies on)
    rebuilt = ex._build(c.checkpoint_id)
    ex._replay(rebuilt, c.ops)
    assert snapshot(StateView(be, rebuilt)) == snapshot(StateView(be, hc))
    out = {"before": before, "after": after,
           "A": (snapshot(StateView(be, ha)), {q: _rank(be, ha, q) for q in queries}),
           "B": (snapshot(StateView(be, hb)), {q: _rank(be, hb, q) for q in queries}),
           "C": (snapshot(StateView(be, hc)), {q: _rank(be, hc, q) for q in queries}),
           "forks": ex.forks, "rebuilds": ex.rebuilds}
    ex.close()
    return out


@pytest.mark.parametrize("update_policy,delete", POLICIES)
def test_forks_isolate_parent_siblings_and_checkpoint(tmp_path, update_policy, delete):
    be_copy = embedded(tmp_path / "copy", update_policy, delete)
    be_nocopy = embedded(tmp_path / "nocopy", update_policy, delete, cls=NonCopyableBackend)
    try:
        native = _scenario(be_copy)
        replayed = _scenario(be_nocopy)
    finally:
        be_copy.close()
        be_nocopy.close()
    assert native["forks"] > 0 and replayed["forks"] == 0 and replayed["rebuilds"] > 0
    # the non-copyable path isolates the same way and ranks the same
    for key in ("before", "after", "A", "B", "C"):
        assert replayed[key] == native[key], key


def test_non_copyable_backend_is_really_non_copyable(tmp_path):
    be = embedded(tmp_path, cls=NonCopyableBackend)
    h = be.build(next(iter(suite().checkpoints.values())))
    assert not be.capabilities.copyable and isinstance(be, EmbeddedBackend)
    with pytest.raises(NotImplementedError):
        be.fork(h)
    be.close()
