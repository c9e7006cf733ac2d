"""Ground truth for the fuzzer itself (issue 9, item 7): memory backends with one planted defect each, beside the
same backend without it (:mod:`tests.support.planted`), fuzzed by a real campaign with the real oracle
(default judging: selection level, no reader).

For every pair, with the same seed and budget: the campaign on the defective build finds failures of the planted
class (:data:`tests.support.planted.CLASSES`), at least 95% of the failures the defective build has and the clean
build lacks are of that class (compared by unique-failure key and by cause), and the clean build shows none of
that class. A question-only mutant of a state the class's state mutation made (another question asked after the
evicting add, about what it evicted) fails through the same defect, and counts as the class.

Where a suite would make the clean build fail that class for reasons of its own, the pair runs on the plain
world (:mod:`tests.support.planted_world`), in which the clean embedded backend retrieves right.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import pytest

from tests.support import planted
from tests.support.planted_world import PATH as WORLD
from tests.support.planted_world import plain_world
from ufuzz.backends import registry
from ufuzz.engine.campaign import Campaign, CampaignConfig
from ufuzz.model import Checkpoint, Memory
from ufuzz.operators import registry as operators
from ufuzz.seeds.io import load_suite, suite_records

SHARE = 0.95
QUERY_OPERATORS = frozenset(operators.names("query", opt_in=True))


@dataclass(frozen=True)
class Setup:
    """How a pair is fuzzed: the suite (None: the shipped one), retrieval mode, k, budget and campaign seed."""

    seeds: str | None
    retrieval: str = "bm25"
    k: int = 5
    budget: int = 300
    seed: int = 1
    options: dict[str, str] = field(default_factory=dict)


SETUPS: dict[str, Setup] = {
    # the shipped suite: a delete that never reaches search is found whatever the wording
    "delete-hides": Setup(seeds=None, budget=200),
    # the plain world: on the shipped suite, the superseded version often sits at rank k with its successor out
    # of the top-k (stale_ranked_above_valid too, since 2026-12-06); the plain world shows the tie cleanly
    "version-ties": Setup(seeds=str(WORLD), budget=200),
    # the plain world: on the shipped suite other seeds ask in the same shape, so the name-blind cache also
    # fails paraphrases, and dense retrieval ranks stale memories first by itself
    "entity-blind": Setup(seeds=str(WORLD), k=2, budget=200),
    # the plain world: in the shipped suite one seed in 96 asks about its checkpoint's oldest memory
    "add-evicts": Setup(seeds=str(WORLD), budget=400),
    # the clean threshold sits between what a question about an unmentioned person scores on its decoy (at most
    # 0.24 measured over a 1000-execution campaign) and the lowest score of supporting evidence (0.83)
    "low-threshold": Setup(seeds=str(WORLD), k=10, options={"low": "0.05", "high": "0.5"}),
    # the shipped suite: an update's new words (a value, often a name) are what its old text lacks
    "stale-index": Setup(seeds=None),
}


def _campaign(backend: str, setup: Setup, out) -> list:
    c = Campaign(CampaignConfig(backend=backend, backend_options={"db": "memory", "retrieval": setup.retrieval,
                                                                  **setup.options},
                                seeds=setup.seeds, k=setup.k, budget=setup.budget, seed=setup.seed, out=str(out)))
    summary = c.run()
    assert summary["status"] == "budget_spent" and summary["errors"] == 0
    return [f for _, f in c.failure_log]


def _lineage(out) -> dict[str, tuple[str | None, str, str]]:
    """Every mutant of the campaign in ``out``: case id -> (parent id, operator, target), from its database."""
    con = sqlite3.connect(out / "corpus.sqlite")
    try:
        return {cid: (pid, op or "", target or "")
                for cid, pid, op, target in con.execute("SELECT case_id, parent_id, operator, target FROM mutants")}
    finally:
        con.close()


def _of_class(cls, f, lineage) -> bool:
    """Whether ``f`` is of the planted class: made by its mutation, or — for a question-only mutation (another
    wording, another target) — asked on a state that an ancestor made by the class's state mutation: the defect
    (an add that evicted a memory) seen through another question about what it took."""
    if cls.holds(f):
        return True
    if f.kind not in cls.kinds or f.operator not in QUERY_OPERATORS:
        return False
    parent = lineage.get(f.case_id, (None, "", ""))[0]
    while parent in lineage:
        parent, op, target = lineage[parent]
        if op in QUERY_OPERATORS:
            continue
        return cls.made_by(op, target)
    return False


def _also_clean(clean_name: str, setup: Setup, tmp_path, defective: list, clean_keys: set[str]) -> set[str]:
    """The defective campaign's failures that the clean build shows too, replayed on it (export, then
    ``corpus check --cross-backend``): the system's own behaviour, which the clean campaign's schedule did not
    happen to reach."""
    from ufuzz.triage.check import check_corpus
    from ufuzz.triage.corpusfile import export_campaign

    if all(f.key in clean_keys for f in defective):
        return set()
    corpus = tmp_path / "defective.jsonl"
    export_campaign(tmp_path / "defective", corpus)
    report = check_corpus(corpus, backend=clean_name, options={"db": "memory", "retrieval": setup.retrieval,
                                                              **setup.options})
    return {r.failure_key for r in report.results if r.status == "reproduced"}


def _describe(failures) -> list[tuple[str, str, str, str]]:
    return sorted((f.seed_id, f.operator, f.target, f.kind) for f in failures)


@pytest.fixture(scope="module")
def names():
    return planted.register_all()


@pytest.mark.parametrize("pair", list(SETUPS))
def test_planted_defect_is_found_and_nothing_else(pair, names, tmp_path):
    setup, cls = SETUPS[pair], planted.CLASSES[pair]
    defective_name, clean_name = names[pair]
    defective = _campaign(defective_name, setup, tmp_path / "defective")
    clean = _campaign(clean_name, setup, tmp_path / "clean")

    found = [f for f in defective if cls.holds(f)]
    assert found, f"{pair}: the defective build shows no failure of the planted class {cls}"
    assert not [f for f in clean if cls.holds(f)], \
        f"{pair}: the clean build fails the planted class: {_describe(f for f in clean if cls.holds(f))}"
    # every write of every clean build is read back beside its twin (engine.readback): none is charged
    assert not [f for f in clean if f.kind == "write_not_found"], pair

    # a failure of the defective build is the defect's when the clean build does not show it: not in the clean
    # campaign, and — the two campaigns' schedules part as soon as their results differ — not on replay either
    clean_keys = {f.key for f in clean}
    clean_keys |= _also_clean(clean_name, setup, tmp_path, defective, clean_keys)
    only = [f for f in defective if f.key not in clean_keys]
    lineage = _lineage(tmp_path / "defective")
    outside = [f for f in only if not _of_class(cls, f, lineage)]
    assert len(only) - len(outside) >= SHARE * len(only), \
        f"{pair}: {len(outside)} of {len(only)} defective-only failures are not {cls}: {_describe(outside)}"

    clean_causes = {f.cause for f in clean} | {f.cause for f in defective if f.key in clean_keys}
    causes = {f.cause: f for f in defective if f.cause not in clean_causes}
    outside_causes = [f for f in causes.values() if not _of_class(cls, f, lineage)]
    assert causes and len(causes) - len(outside_causes) >= SHARE * len(causes), \
        f"{pair}: defective-only causes outside {cls}: {_describe(outside_causes)}"


# -- each planted behaviour, and its absence in the clean twin ---------------------------------------------

def _backend(names, pair: str, defective: bool, tmp_path, **options):
    cls = registry.load(names[pair][0 if defective else 1])
    return cls(tmp_path / ("bad" if defective else "good"), {"db": "memory", "retrieval": "bm25", **options})


CP = Checkpoint(id="c", memories=(
    Memory("c-m1", "Lena's employer is Brellix Systems.", "2024-01-01T09:00:00"),
    Memory("c-m2", "Tarik's employer is Quandor Freight.", "2024-01-02T09:00:00"),
    Memory("c-m3", "Ilsa's employer is Oskelon Labs.", "2024-01-03T09:00:00"),
), facts=())


def _ids(backend, state, query, k=3) -> list[str]:
    return [r.id for r in backend.retrieve(state, query, k)]


@pytest.mark.parametrize("defective", [True, False])
def test_delete_hides_only_from_the_document_store(names, tmp_path, defective):
    b = _backend(names, "delete-hides", defective, tmp_path)
    s = b.build(CP)
    assert b.delete(s, "c-m2").ok
    assert b.get(s, "c-m2") is None and "c-m2" not in {m.id for m in b.list(s)}
    assert ("c-m2" in _ids(b, s, "Who is Tarik's employer?")) is defective


@pytest.mark.parametrize("defective", [True, False])
def test_version_ties_rank_the_oldest_version_first(names, tmp_path, defective):
    b = _backend(names, "version-ties", defective, tmp_path)
    s = b.build(CP)
    new = Memory("c-m2~u", "Tarik's employer is Tellaris Bank.", "2024-02-01T09:00:00")
    assert b.update(s, "c-m2", new).ok
    top = _ids(b, s, "Who is Tarik's employer now?")
    assert set(top[:2]) == {"c-m2", "c-m2~u"}  # both versions stay retrievable (previous questions)
    assert top[0] == ("c-m2" if defective else "c-m2~u")


@pytest.mark.parametrize("defective", [True, False])
def test_entity_blind_cache_answers_another_entity(names, tmp_path, defective):
    b = _backend(names, "entity-blind", defective, tmp_path)
    s = b.build(CP)
    assert _ids(b, s, "Who is Lena's employer now?", 1) == ["c-m1"]
    fork = b.fork(s)
    assert _ids(b, fork, "Who is Tarik's employer now?", 1) == (["c-m1"] if defective else ["c-m2"])
    assert _ids(b, fork, "Who is Tarik's employer, please?", 1) == ["c-m2"]  # another shape: no cache hit
    b.add(fork, Memory("c-m9", "The kettle broke.", "2024-03-01T09:00:00"))  # a write empties the cache
    assert _ids(b, fork, "Who is Tarik's employer now?", 1) == ["c-m2"]


@pytest.mark.parametrize("defective", [True, False])
def test_add_past_capacity_evicts_the_oldest_from_search_only(names, tmp_path, defective):
    b = _backend(names, "add-evicts", defective, tmp_path)
    s = b.build(CP)
    assert b.add(s, Memory("c-m9", "The kettle broke.", "2024-03-01T09:00:00")).ok
    assert b.get(s, "c-m1").text == CP.memories[0].text and len(b.list(s)) == 4
    assert ("c-m1" in _ids(b, s, "Who is Lena's employer?")) is not defective
    assert "c-m2" in _ids(b, s, "Who is Tarik's employer?")


@pytest.mark.parametrize("defective", [True, False])
def test_relevance_cutoff_is_declared(names, tmp_path, defective):
    b = _backend(names, "low-threshold", defective, tmp_path, low="0.05", high="0.5")
    assert b.capabilities.relevance_threshold == (0.05 if defective else 0.5)
    s = b.build(CP)
    assert bool(_ids(b, s, "Who is Thea's employer now?")) is defective  # only "employer" in common


def test_plain_world_fixture_is_the_generators_output():
    committed = list(suite_records(load_suite(WORLD)))
    assert committed == list(suite_records(plain_world()))
