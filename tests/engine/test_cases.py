"""The case book keeps retained mutants as recipes and rebuilds an evicted one equal to the original."""

from __future__ import annotations

import pickle

from ufuzz._util.lru import LRU
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.engine.cases import CaseBook
from ufuzz.seeds.synth import synthesize


def test_lru_evicts_the_least_recently_used_and_pickles_its_order():
    c = LRU(2)
    c["a"], c["b"] = 1, 2
    assert c["a"] == 1  # a is now the most recent
    c["c"] = 3
    assert "b" not in c and list(c) == ["a", "c"] and c.evictions == 1
    again = pickle.loads(pickle.dumps(c))
    again["d"] = 4
    assert list(again) == ["c", "d"]


def test_every_retained_mutant_is_rebuilt_equal_from_its_recipe(tmp_path):
    c = Campaign(CampaignConfig(budget=250, seed=2, out=str(tmp_path / "c"), backend_options={"retrieval": "bm25"}),
                 suite=synthesize(personas=2, seed=7))
    c.run()
    book = c.cases
    retained = [cid for cid in book if cid.startswith("x")]
    assert len(retained) > 20 and any(book[cid].ops for cid in retained)
    originals = {cid: book[cid] for cid in retained}
    small = CaseBook(live=1)  # every lookup but the last one rebuilds
    small.__setstate__({**book.__getstate__(), "live": 1})
    for cid, case in originals.items():
        assert small[cid] == case
        assert small[cid].provenance == case.provenance and small[cid].state_key == case.state_key
    assert small.rebuilt >= len(originals)
    # a recipe holds what the mutant changed, not its whole provenance: far fewer references than the cases
    held = sum(len(c.provenance.facts) + len(c.provenance.memory_texts) for c in originals.values())
    kept = sum(len(run) if run[0] == "s" else len(run[1]) + 1
               for r in book._recipes.values() for runs in (r.facts, r.texts) for run in runs)
    assert kept * 2 < held  # (the more memories a checkpoint has, the larger the saving)
    assert len(small._live) == 1  # at most ``live`` mutants materialised
