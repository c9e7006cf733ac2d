"""The package's layers follow the data flow: every import points down, and no modules import each other in a
circle. Imports inside functions count too: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1] / "ufuzz"

#: Lower ranks are lower layers. A package may import its own modules and any package of a lower rank; two
#: packages of one rank are independent of each other.
RANK = {
    "model": 0, "_util": 0, "plugins": 0,
    "seeds": 1, "llm": 1,
    "backends": 2,
    "operators": 3, "oracles": 3,
    "corpus": 4,
    "engine": 5,
    "triage": 6,
    "reports": 7,
    "cli": 8,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ufuzz":  # from ufuzz import plugins
                out.update(f"ufuzz.{a.name}" for a in node.names)
            elif node.module.startswith("ufuzz."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("ufuzz."))
    return out


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in ROOT.rglob("*.py"):
        name = _module_name(path)
        g.add_node(name)
        for target in _imports(path):
            g.add_edge(name, target)
    return g


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_package_has_a_rank():
    packages = {_package(m) for m in _graph().nodes} - {None, "__main__"}
    assert packages <= set(RANK), f"give these packages a layer in RANK: {sorted(packages - set(RANK))}"


def test_imports_point_down():
    upward = []
    for src, dst in _graph().edges:
        a, b = _package(src), _package(dst)
        if a in (None, "__main__") or a == b:
            continue
        if b is None or RANK[b] >= RANK[a]:
            upward.append(f"{src} -> {dst}")
    assert not upward, "imports that do not point to a lower layer:\n" + "\n".join(sorted(upward))


def test_no_import_circles():
    g = _graph()
    # a package's __init__ re-exporting its own modules (or a module naming itself) is not a circle
    g.remove_edges_from([(s, d) for s, d in list(g.edges)
                         if s == d or d == s.rsplit(".", 1)[0] or s == d.rsplit(".", 1)[0]])
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import circles: {cycles[:5]}"


def test_the_checks_see_a_violation(tmp_path, monkeypatch):
    """The layer check is not vacuous: a model module importing the engine is caught."""
    pkg = tmp_path / "ufuzz"
    (pkg / "model").mkdir(parents=True)
    (pkg / "engine").mkdir()
    (pkg / "model" / "x.py").write_text("from ufuzz.engine.y import Z\n")
    (pkg / "engine" / "y.py").write_text("from ufuzz.model.x import W\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", pkg)
    g = _graph()
    assert ("ufuzz.model.x", "ufuzz.engine.y") in g.edges
    assert list(nx.simple_cycles(g))
