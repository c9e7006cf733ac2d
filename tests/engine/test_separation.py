"""Failures and references never reach the scheduler: by construction (imports, signatures) and at run time."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import ufuzz.engine.scheduler as scheduler_mod

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("ufuzz.oracles", "ufuzz.corpus")


def _ufuzz_imports(module_path: Path) -> set[str]:
    tree = ast.parse(module_path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ufuzz"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("ufuzz"))
    return out


def _module_file(name: str) -> Path:
    rel = Path(*name.split("."))
    for cand in (ROOT / f"{rel}.py", ROOT / rel / "__init__.py"):
        if cand.exists():
            return cand
    raise FileNotFoundError(name)


def test_scheduler_transitively_imports_no_oracle_or_corpus_module():
    seen, todo = set(), ["ufuzz.engine.scheduler"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_ufuzz_imports(_module_file(name)))
    bad = sorted(n for n in seen if n.startswith(FORBIDDEN))
    assert not bad, f"scheduler reaches {bad}"


def test_scheduler_api_takes_no_reference_or_failure():
    for _, fn in inspect.getmembers(scheduler_mod.Scheduler, inspect.isfunction):
        src = inspect.signature(fn)
        for p in src.parameters.values():
            ann = str(p.annotation)
            # whole names: the scheduler's own StepOutcome is not the oracle's Outcome
            assert not re.search(r"\b(Reference|Failure|Outcome)\b", ann), (fn.__name__, p)


def _walk(obj, seen, found):
    if id(obj) in seen:
        return
    seen.add(id(obj))
    from ufuzz.model import Reference
    from ufuzz.oracles.expectations import Outcome
    from ufuzz.oracles.verdict import Failure

    if isinstance(obj, (Reference, Failure, Outcome)):
        found.append(obj)
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            _walk(k, seen, found)
            _walk(v, seen, found)
    elif isinstance(obj, (list, tuple, set, frozenset)) or type(obj).__name__ == "deque":
        for v in obj:
            _walk(v, seen, found)
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("ufuzz"):
        _walk(vars(obj), seen, found)


def test_scheduler_state_after_a_campaign_holds_no_reference_or_failure(small_campaign):
    campaign = small_campaign
    assert campaign.summary()["unique_failures"] > 0, "the check is only meaningful when failures were found"
    found: list = []
    _walk(campaign.scheduler, set(), found)
    assert found == []
    # retained pool entries are exactly the mutants whose feedback retained them — failing or not
    retained = {row.case_id for row in campaign.store.feedback(campaign.campaign_id) if row.retained}
    pool = {e.case_id for e in campaign.scheduler._pool if e.case_id.startswith("x")}
    assert pool <= retained
    assert "ufuzz.oracles" not in {m for m in sys.modules if m == "ufuzz.engine.scheduler"}


def _evicting_campaign(tmp_path, monkeypatch, name: str):
    """A campaign on a REST product whose unrelated adds evict the oldest memory (state-level failures)."""
    from tests.oracles.test_http_ground_truth import TOKEN, _config
    from tests.support.http_product_server import start_product_server
    from tests.support.planted_world import PATH as WORLD
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    monkeypatch.setenv("PRODUCT_API_TOKEN", TOKEN)
    out = tmp_path / name
    out.mkdir()
    with start_product_server(TOKEN, capacity=5) as srv:
        c = Campaign(CampaignConfig(backend="http", backend_options={"config": str(_config(out, srv.base_url, ""))},
                                    seeds=str(WORLD), budget=120, seed=3, out=str(out / "c")))
        c.run()
    mutants = [(m.case_id, m.operator, m.valid, m.rejection_reason) for m in c.store.mutants(c.campaign_id)]
    return c, mutants


def test_state_level_failures_never_reach_the_scheduler(tmp_path, monkeypatch):
    """Side effects found by a state operator's verification are failures (level "state") recorded on the
    oracle side only: the scheduler holds none, and the campaign goes exactly as when they are not recorded."""
    from ufuzz.operators.sideeffects import Finding
    from ufuzz.oracles.oracle import Oracle

    campaign, mutants = _evicting_campaign(tmp_path, monkeypatch, "recorded")
    state = [f for _, f in campaign.failure_log if f.stage == "state"]
    assert state and {f.kind for f in state} == {"collateral_removal"}
    found: list = []
    _walk(campaign.scheduler, set(), found)
    assert found == []
    held: list = []

    def finds(obj, seen):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, Finding):
            held.append(obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                finds(v, seen)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for v in obj:
                finds(v, seen)
        elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("ufuzz"):
            finds(vars(obj), seen)

    finds(campaign.scheduler, set())
    assert held == []
    monkeypatch.setattr(Oracle, "state_failure", lambda self, *a, **k: "")
    silent, silent_mutants = _evicting_campaign(tmp_path, monkeypatch, "silent")
    assert not [f for _, f in silent.failure_log if f.stage == "state"]
    assert silent_mutants == mutants  # the same mutants, in the same order, accepted and rejected alike
