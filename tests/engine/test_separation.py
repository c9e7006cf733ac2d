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
