"""``ufuzz bench``: compare search strategies on one backend and one seed suite.

Every strategy runs ``runs`` campaigns with seeds ``base_seed + 0 .. runs-1`` and the same budget. For each
run the bench records, from the campaign's progress callback:

* **UF@b** — unique failures found within the first b executions (exact: from the campaign's failure log,
  which numbers each first occurrence by execution);
* **Cov@b** — coverage ratio after the last step that ended within b executions: distinct checkpoint memories
  reached in any top-k / all memories of the suite's checkpoints (memories that state mutants added are not
  counted, so the ratio is at most 1 and matches ``CorpusStore.summary``);

at b = N/4, N/2, 3N/4 and N, plus the whole step curve, the distinct (normalised) responses the run saw (the
feedback of hidden retrieval, where no coverage is observed and Cov@b is not shown), and (unless disabled) the reproduce rate of the run's
failures by :func:`ufuzz.triage.replay.replay_campaign` on a fresh backend instance. A campaign that runs
out of work before the budget keeps its final values at the later budgets.

Outputs in ``out``: ``bench.json`` (configuration, per-run numbers, per-strategy mean/std, mean curves),
``bench.md`` (a Markdown table), ``curves.svg`` (mean unique failures and coverage against executions, one
line per strategy; ``curves.png`` too when matplotlib is importable) and ``runs/<strategy>/r<i>-s<seed>/``,
each a normal campaign directory (``ufuzz status`` / ``ufuzz replay`` work on it).

One backend instance is shared by all runs (wrapped so that a campaign's ``close`` does not close it);
campaigns never share states, since each builds its own from the checkpoints.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufuzz.backends import registry
from ufuzz.backends.protocol import (
    Answer,
    BackendError,
    Capabilities,
    MemoryBackend,
    OpResult,
    Retrieved,
    StateHandle,
    StoredMemory,
)
from ufuzz.model import Checkpoint, Memory, SeedSuite

__all__ = ["BenchConfig", "DEFAULT_STRATEGIES", "parse_strategies", "run_bench", "budgets_of", "render_table",
           "render_markdown", "write_outputs"]

DEFAULT_STRATEGIES = ("full", "random", "query-only", "state-only", "no-feedback")
CURVE_POINTS = 100


@dataclass
class BenchConfig:
    backend: str = "embedded"
    budget: int = 2000
    runs: int = 3
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    seeds: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    out: str | None = None  # default reports/bench-<backend>
    base_seed: int = 0
    replay: bool = True
    k: int = 5
    #: further campaign settings for every run (CampaignConfig fields): retrieval="hidden", llm_uses=("answer",),
    #: llm_base_url, llm_model … — e.g. a library backend as an agent answering through an LLM endpoint
    campaign: dict[str, Any] = field(default_factory=dict)

    @property
    def out_dir(self) -> Path:
        return Path(self.out or f"reports/bench-{self.backend}")


def parse_strategies(text: str) -> tuple[str, ...]:
    """``full,random`` → names; ``all`` → every strategy; unknown names raise ValueError naming them."""
    from ufuzz.engine.strategies import strategy_names

    known = strategy_names()
    if text.strip() == "all":
        return tuple(known)
    names = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    if not names:
        raise ValueError("no strategy given; e.g. --strategies full,random (or all)")
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"unknown strateg{'y' if len(bad) == 1 else 'ies'} {', '.join(map(repr, bad))}; "
                         f"known: {', '.join(known)} (or all)")
    return names


def budgets_of(budget: int) -> list[int]:
    """The intermediate budgets N/4, N/2, 3N/4 and N (deduplicated, at least 1)."""
    return sorted({max(1, budget * i // 4) for i in (1, 2, 3, 4)})


class _Shared(MemoryBackend):
    """Forwards everything to one backend; ``close`` is a no-op so campaigns can share it."""

    def __init__(self, inner: MemoryBackend) -> None:  # noqa: D107 - no workdir of its own
        self.inner = inner
        self.name = inner.name
        self.workdir = inner.workdir
        self.options = inner.options

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def build(self, checkpoint: Checkpoint) -> StateHandle:
        return self.inner.build(checkpoint)

    def fork(self, state: StateHandle) -> StateHandle:
        return self.inner.fork(state)

    def release(self, state: StateHandle) -> None:
        self.inner.release(state)

    def retrieve(self, state: StateHandle, query: str, k: int) -> list[Retrieved]:
        return self.inner.retrieve(state, query, k)

    def answer(self, state: StateHandle, query: str, retrieved: list[Retrieved]) -> str | Answer | None:
        return self.inner.answer(state, query, retrieved)

    def add(self, state: StateHandle, memory: Memory) -> OpResult:
        return self.inner.add(state, memory)

    def update(self, state: StateHandle, memory_id: str, new: Memory) -> OpResult:
        return self.inner.update(state, memory_id, new)

    def delete(self, state: StateHandle, memory_id: str) -> OpResult:
        return self.inner.delete(state, memory_id)

    def get(self, state: StateHandle, memory_id: str) -> StoredMemory | None:
        return self.inner.get(state, memory_id)

    def list(self, state: StateHandle) -> list[StoredMemory]:
        return self.inner.list(state)

    def close(self) -> None:  # the bench closes the inner backend itself
        pass


def _value_at(curve: list[tuple[int, int, int]], b: int, idx: int) -> int:
    """The curve's column ``idx`` after the last point with executions <= b (0 before the first)."""
    val = 0
    for point in curve:
        if point[0] > b:
            break
        val = point[idx]
    return val


def _run_one(cfg: BenchConfig, strategy: str, run: int, suite: SeedSuite, backend: MemoryBackend,
             run_dir: Path) -> dict[str, Any]:
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.strategies import apply_strategy

    seed = cfg.base_seed + run
    if run_dir.exists():
        shutil.rmtree(run_dir)
    ccfg = CampaignConfig(backend=cfg.backend, backend_options=dict(cfg.options), seeds=cfg.seeds,
                          budget=cfg.budget, seed=seed, k=cfg.k, out=str(run_dir), **cfg.campaign)
    apply_strategy(ccfg, strategy)
    campaign = Campaign(ccfg, suite=suite, backend=backend)
    total = sum(len(cp.memories) for cp in suite.checkpoints.values())
    curve: list[tuple[int, int, int]] = [(0, 0, 0)]  # (executions, unique failures, checkpoint memories reached)

    def on_progress(p: Any) -> None:  # after every step: UF@b and Cov@b at any b, whatever the batch
        point = (p.executions, p.unique_failures, p.coverage)  # checkpoint memories reached (a running count)
        if point[1:] == curve[-1][1:]:
            return  # a step function: only changes are kept
        if point[0] == curve[-1][0]:
            curve[-1] = point
        else:
            curve.append(point)

    t0 = time.perf_counter()
    summary = campaign.run(on_step=on_progress)
    wall = time.perf_counter() - t0
    found = [n for n, _ in campaign.failure_log]
    by_class = _by_class(f for _, f in campaign.failure_log)
    at = {}
    for b in budgets_of(cfg.budget):
        cov = _value_at(curve, b, 2)
        at[str(b)] = {"unique_failures": sum(1 for n in found if n <= b),
                      "coverage": cov / total if total else 0.0, "coverage_reached": cov}
    final_reached = curve[-1][2]
    rec: dict[str, Any] = {
        "strategy": strategy, "run": run, "seed": seed, "dir": str(run_dir), "campaign": summary["campaign"],
        "status": summary["status"], "executions": summary["executions"], "wall_seconds": round(wall, 3),
        "unique_failures": summary["unique_failures"], "causes": summary["causes"],
        "classes": len(by_class), "by_class": by_class,
        "baseline_failures": summary["baseline_failures"], "coverage_reached": final_reached,
        "coverage_total": total, "coverage": final_reached / total if total else 0.0,
        "mutants_valid": summary["mutants_valid"], "mutants_rejected": summary["mutants_rejected"],
        "retained": summary["retained"], "errors": summary["errors"], "at": at,
        "hidden": not (summary.get("judging") or {}).get("selection", True),
        "responses": campaign.feedback.totals()["responses"] if campaign.feedback is not None else 0,
        "curve": [list(p) for p in curve], "replay": None,
    }
    return rec


def _by_class(failures: Any) -> dict[str, dict[str, int]]:
    """Unique failures and causes per behaviour class (:mod:`ufuzz.oracles.classes`) of a run's failures."""
    from ufuzz.oracles.classes import class_of

    out: dict[str, dict[str, Any]] = {}
    for f in failures:
        row = out.setdefault(class_of(f.operator, f.stage, f.kind).id, {"unique": 0, "causes": set()})
        row["unique"] += 1
        row["causes"].add(f.cause)
    return {cid: {"unique": r["unique"], "causes": len(r["causes"])} for cid, r in sorted(out.items())}


def _replay_run(rec: dict[str, Any]) -> None:
    from ufuzz.triage.replay import replay_campaign

    t0 = time.perf_counter()
    report = replay_campaign(rec["dir"])
    rec["replay"] = {"reproduced": report.reproduced, "total": report.total, "rate": report.rate,
                     "seconds": round(time.perf_counter() - t0, 3),
                     "not_reproduced": [{"failure": r.failure_key, "case": r.case_id, "reason": r.reason}
                                        for r in report.results if not r.reproduced]}


def _mean_std(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0}


def _grid(budget: int) -> list[int]:
    step = max(1, budget // CURVE_POINTS)
    xs = list(range(0, budget + 1, step))
    if xs[-1] != budget:
        xs.append(budget)
    return xs


def aggregate(runs: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """Per-strategy mean/std of the run numbers and mean curves on a common grid of executions."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault(r["strategy"], []).append(r)
    xs = _grid(budget)
    out: dict[str, Any] = {}
    for name, rs in by.items():
        agg: dict[str, Any] = {"runs": len(rs)}
        for b in budgets_of(budget):
            agg[f"uf@{b}"] = _mean_std([r["at"][str(b)]["unique_failures"] for r in rs])
            agg[f"cov@{b}"] = _mean_std([r["at"][str(b)]["coverage"] for r in rs])
        agg["causes"] = _mean_std([r.get("causes", 0) for r in rs])
        agg["classes"] = _mean_std([r.get("classes", 0) for r in rs])
        # the classes any run of the strategy found, with how many of its runs found each
        seen: dict[str, int] = {}
        for r in rs:
            for cid in r.get("by_class", {}):
                seen[cid] = seen.get(cid, 0) + 1
        agg["classes_found"] = dict(sorted(seen.items()))
        agg["responses"] = _mean_std([r.get("responses", 0) for r in rs])
        agg["hidden"] = all(r.get("hidden", False) for r in rs)
        agg["baseline_failures"] = _mean_std([r.get("baseline_failures", 0) for r in rs])
        agg["executions"] = _mean_std([r["executions"] for r in rs])
        agg["wall_seconds"] = _mean_std([r["wall_seconds"] for r in rs])
        replays = [r["replay"] for r in rs if r.get("replay") is not None]
        if replays:
            rep, tot = sum(x["reproduced"] for x in replays), sum(x["total"] for x in replays)
            agg["reproduced"] = {"reproduced": rep, "total": tot, "rate": rep / tot if tot else None}
        else:
            agg["reproduced"] = None
        uf = [statistics.fmean(_value_at([tuple(p) for p in r["curve"]], x, 1) for r in rs) for x in xs]
        cov = [statistics.fmean(_value_at([tuple(p) for p in r["curve"]], x, 2) / max(r["coverage_total"], 1)
                                for r in rs) for x in xs]
        agg["curve"] = {"executions": xs, "unique_failures": uf, "coverage": cov}
        out[name] = agg
    return out


#: the Mann-Whitney U test and A12 are reported from this many runs per strategy on (Klees et al. ask for more;
#: fewer runs cannot give a small p-value at all: 3 + 3 runs never go below p = 0.1)
MIN_TEST_RUNS = 5
REFERENCE = "full"


def _metric(r: dict[str, Any], metric: str, budget: int) -> float:
    if metric == "uf":
        return float(r["at"][str(budget)]["unique_failures"])
    if metric == "cov":
        return float(r["at"][str(budget)]["coverage"])
    return float(r.get(metric, 0))


def compare(runs: list[dict[str, Any]], budget: int, reference: str = REFERENCE) -> dict[str, Any]:
    """``reference`` against every other strategy, per metric (UF@N, causes, classes, Cov@N): the Mann-Whitney U
    two-sided p-value and the Vargha-Delaney A12 of ``reference`` over the other (>0.5: the reference does
    better). Only where both have at least :data:`MIN_TEST_RUNS` runs; otherwise ``{"skipped": why}``."""
    from ufuzz.reports.stats import a12, mann_whitney_u

    by: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault(r["strategy"], []).append(r)
    ref = by.get(reference)
    if ref is None:
        return {"skipped": f"no {reference!r} runs to compare against"}
    if len(ref) < MIN_TEST_RUNS:
        return {"skipped": f"{len(ref)} run(s) of {reference!r}: the test needs at least {MIN_TEST_RUNS}"}
    out: dict[str, Any] = {}
    for name, rs in by.items():
        if name == reference or len(rs) < MIN_TEST_RUNS:
            continue
        row = {}
        for metric in ("uf", "causes", "classes", "cov"):
            if metric == "cov" and any(r.get("hidden") for r in rs + ref):
                continue
            x = [_metric(r, metric, budget) for r in ref]
            y = [_metric(r, metric, budget) for r in rs]
            u, p = mann_whitney_u(x, y)
            row[metric] = {"a12": a12(x, y), "p": p, "u": u, "runs": [len(x), len(y)]}
        out[name] = row
    return out


def run_bench(cfg: BenchConfig, *, echo: Callable[[str], None] | None = None,
              backend: MemoryBackend | None = None) -> dict[str, Any]:
    """Run the bench, write its outputs into ``cfg.out_dir`` and return the bench.json content.

    ``backend`` (optional) is an already created backend to share (not closed here); otherwise one is
    created from ``cfg.backend``/``cfg.options`` and closed at the end. Raises ``ValueError`` for a bad
    strategy/budget and whatever loading the seed suite or creating the backend raises for bad input.
    """
    from ufuzz.engine.campaign import resolve_seeds
    from ufuzz.engine.strategies import strategy_names
    from ufuzz.operators import names as operator_names
    from ufuzz.seeds.io import load_suite

    say = echo or (lambda _s: None)
    if cfg.budget < 1 or cfg.runs < 1:
        raise ValueError("budget and runs must be at least 1")
    for s in cfg.strategies:
        if s not in strategy_names():
            raise ValueError(f"unknown strategy {s!r}; known: {', '.join(strategy_names())}")
    suite = load_suite(resolve_seeds(cfg.seeds), memory_ops=operator_names("state"))
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    own = backend is None
    inner = backend if backend is not None else registry.create(cfg.backend, out / "backend", cfg.options)
    shared = _Shared(inner)
    runs: list[dict[str, Any]] = []
    interrupted = False
    t_all = time.perf_counter()

    def result_now(partial: bool) -> dict[str, Any]:
        return {
            "config": {"backend": cfg.backend, "options": {k: v for k, v in cfg.options.items()
                                                            if "key" not in k.lower()},
                       "campaign": {k: v for k, v in cfg.campaign.items() if "key" not in k.lower()},
                       "budget": cfg.budget, "runs": cfg.runs, "strategies": list(cfg.strategies),
                       "seeds": str(resolve_seeds(cfg.seeds)), "base_seed": cfg.base_seed, "replay": cfg.replay,
                       "k": cfg.k, "budgets": budgets_of(cfg.budget)},
            "backend": inner.describe(),
            "suite": {"seeds": len(suite.seeds), "checkpoints": len(suite.checkpoints),
                      "memories": sum(len(c.memories) for c in suite.checkpoints.values())},
            "interrupted": interrupted, "partial": partial,
            "wall_seconds": round(time.perf_counter() - t_all, 3),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "strategies": aggregate(runs, cfg.budget),
            "tests": compare(runs, cfg.budget),
            "runs": runs,
        }

    try:
        # run-major order (run 0 of every strategy, then run 1, ...): a bench stopped early still has every
        # strategy, and slow drift of the machine's load spreads over all strategies alike
        for i in range(cfg.runs):
            for strategy in cfg.strategies:
                run_dir = out / "runs" / strategy / f"r{i}-s{cfg.base_seed + i}"
                rec = _run_one(cfg, strategy, i, suite, shared, run_dir)
                runs.append(rec)
                msg = (f"{strategy} run {i} (seed {rec['seed']}): {rec['executions']} executions, "
                       f"{rec['unique_failures']} unique failures, "
                       + (f"{rec['responses']} distinct responses, " if rec["hidden"] else
                          f"coverage {rec['coverage']:.3f}, ")
                       + f"{rec['wall_seconds']:.1f} s")
                if rec["status"] == "interrupted":
                    interrupted = True
                    say(msg + " — interrupted")
                    break
                if cfg.replay:
                    _replay_run(rec)
                    rp = rec["replay"]
                    msg += f"; replay {rp['reproduced']}/{rp['total']} ({rp['seconds']:.1f} s)"
                say(msg)
                write_outputs(result_now(partial=True), out)  # a killed bench still leaves its runs so far
            if interrupted:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own:
            try:
                inner.close()
            except BackendError:
                pass
    result = result_now(partial=False)
    write_outputs(result, out)
    return result


# ---------------------------------------------------------------------------------------------- rendering
def _pm(ms: dict[str, float], digits: int) -> str:
    return f"{ms['mean']:.{digits}f} ± {ms['std']:.{digits}f}"


def _ordered(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Strategies in the configured order (bench.json is written with sorted keys)."""
    aggs = result["strategies"]
    names = [n for n in result["config"]["strategies"] if n in aggs]
    return [(n, aggs[n]) for n in names + sorted(set(aggs) - set(names))]


def _hidden(result: dict[str, Any]) -> bool:
    """Whether every run had hidden retrieval (no coverage observed: responses are shown instead)."""
    aggs = result["strategies"]
    return bool(aggs) and all(a.get("hidden", False) for a in aggs.values())


def _rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    budgets = result["config"]["budgets"]
    hidden = _hidden(result)
    seen = ["responses"] if hidden else [f"Cov@{b}" for b in budgets]
    head = ["strategy", "runs", *(f"UF@{b}" for b in budgets), *seen, "causes", "classes",
            "baseline", "reproduced", "execs", "s/run"]
    rows = []
    for name, agg in _ordered(result):
        rep = agg.get("reproduced")
        rep_s = "-" if not rep else (f"{rep['reproduced']}/{rep['total']}"
                                     + (f" ({100 * rep['rate']:.0f}%)" if rep["rate"] is not None else ""))
        rows.append([name, str(agg["runs"]), *(_pm(agg[f"uf@{b}"], 1) for b in budgets),
                     *([_pm(agg["responses"], 0)] if hidden else [_pm(agg[f"cov@{b}"], 3) for b in budgets]),
                     _pm(agg["causes"], 1), _pm(agg.get("classes") or {"mean": 0.0, "std": 0.0}, 1),
                     _pm(agg["baseline_failures"], 1), rep_s, f"{agg['executions']['mean']:.0f}",
                     f"{agg['wall_seconds']['mean']:.0f}"])
    return head, rows


def _text_table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return lines


_TEST_METRICS = (("uf", "UF@{b}"), ("causes", "causes"), ("classes", "classes"), ("cov", "Cov@{b}"))


def _test_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """``full`` against each other strategy: A12 (p) per metric; None when the tests were skipped."""
    tests = result.get("tests") or {}
    if not tests or "skipped" in tests:
        return None
    b = result["config"]["budget"]
    metrics = [(m, label.format(b=b)) for m, label in _TEST_METRICS if any(m in row for row in tests.values())]
    head = [f"{REFERENCE} vs", *(f"{label} A12 (p)" for _, label in metrics)]
    rows = []
    for name, _ in _ordered(result):
        row = tests.get(name)
        if row is None:
            continue
        rows.append([name, *(f"{row[m]['a12']:.2f} ({row[m]['p']:.3f})" if m in row else "-" for m, _ in metrics)])
    return head, rows


def _tests_note(result: dict[str, Any]) -> str:
    tests = result.get("tests") or {}
    if "skipped" in tests:
        return f"Mann-Whitney U / A12: not computed ({tests['skipped']})."
    return (f"A12: Vargha-Delaney effect size of {REFERENCE} over the strategy (0.5 no difference, 1.0 every "
            f"{REFERENCE} run better); p: two-sided Mann-Whitney U (exact over every split of the runs).")


def _classes_lines(result: dict[str, Any]) -> list[str]:
    """Per strategy, the behaviour classes its runs found (class: runs that found it)."""
    out = []
    for name, agg in _ordered(result):
        found = agg.get("classes_found") or {}
        text = ", ".join(f"{cid} {n}/{agg['runs']}" for cid, n in sorted(found.items(), key=lambda i: (-i[1], i[0])))
        out.append(f"{name}: {text or 'none'}")
    return out


def render_table(result: dict[str, Any]) -> str:
    """Plain-text tables: mean ± std (sample std over runs) per strategy; the classes each found; and, from
    five runs on, ``full`` against each other strategy (A12 and Mann-Whitney U p)."""
    head, rows = _rows(result)
    lines = _text_table(head, rows)
    lines += ["", "behaviour classes found (runs that found each):", *(f"  {x}" for x in _classes_lines(result))]
    tests = _test_rows(result)
    lines.append("")
    if tests is not None:
        lines += _text_table(*tests)
    lines.append(_tests_note(result))
    return "\n".join(lines)


def render_markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    head, rows = _rows(result)
    opts = ", ".join(f"{k}={v}" for k, v in sorted({**c["options"], **c.get("campaign", {})}.items())) \
        or "defaults"
    lines = [f"# ufuzz bench — {c['backend']} ({opts})", "",
             f"Budget {c['budget']} executions, {c['runs']} run(s) per strategy (seeds {c['base_seed']}.."
             f"{c['base_seed'] + c['runs'] - 1}), suite {Path(c['seeds']).name} "
             f"({result['suite']['seeds']} seeds, {result['suite']['memories']} memories), "
             f"top-{c['k']}. Mean ± sample std over runs. UF@b: unique failures (caused by a mutation, of the "
             "memory system) within b executions; "
             + ("retrieval hidden: responses only are observed and judged; responses: distinct normalised "
                "responses seen (over seeds); " if _hidden(result) else
                "Cov@b: checkpoint memories reached / all; ")
             + "causes: distinct "
             "cause keys among the unique failures; classes: distinct behaviour classes among them (one behaviour "
             "of the system, however many facts show it); baseline: seeds failing their own reference. "
             "reproduced: recorded failures (baseline ones included) reproduced by `ufuzz replay` "
             f"on a fresh backend. Total wall time {result['wall_seconds']:.0f} s"
             + (" (interrupted)." if result.get("interrupted") else ".")
             + (f" PARTIAL: {len(result['runs'])} of {c['runs'] * len(c['strategies'])} runs so far."
                if result.get("partial") else ""), "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Behaviour classes found (runs that found each):", "",
              *(f"- {x}" for x in _classes_lines(result)), ""]
    tests = _test_rows(result)
    if tests is not None:
        thead, trows = tests
        lines += ["| " + " | ".join(thead) + " |", "|" + "|".join("---" for _ in thead) + "|",
                  *("| " + " | ".join(r) + " |" for r in trows), ""]
    lines.append(_tests_note(result))
    return "\n".join(lines) + "\n"


def write_outputs(result: dict[str, Any], out: Path) -> list[Path]:
    from ufuzz.reports.plot import Panel, Series, write_chart

    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str), encoding="utf-8")
    (out / "bench.md").write_text(render_markdown(result), encoding="utf-8")
    uf = Panel("Unique failures", "executions", "unique failures (mean)")
    cov = Panel("Coverage", "executions", "memories reached / total (mean)", ymin=0.0, ymax=1.0)
    for name, agg in _ordered(result):
        xs = agg["curve"]["executions"]
        uf.series.append(Series(name, xs, agg["curve"]["unique_failures"]))
        cov.series.append(Series(name, xs, agg["curve"]["coverage"]))
    c = result["config"]
    opts = "".join(f", {k}={v}" for k, v in sorted(c["options"].items()))
    files = write_chart(out / "curves.svg", [uf, cov],
                        title=f"ufuzz bench: {c['backend']}{opts}, budget {c['budget']}, {c['runs']} run(s)")
    return [out / "bench.json", out / "bench.md", *files]
