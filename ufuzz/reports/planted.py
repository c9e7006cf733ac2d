"""``ufuzz bench --planted``: strategies measured by ground-truth bugs, the way Magma measures fuzzers.

Each planted pair of :mod:`ufuzz.backends.adapters.planted` is one memory-system bug planted in the real embedded backend,
beside its clean twin (the same backend without it). For every strategy and run (seeds ``base_seed + 0 ..
runs-1``) the bench runs one campaign on the defective build and one on the clean twin, with the pair's setting
(:data:`ufuzz.backends.adapters.planted.SETTINGS`: suite, retrieval, k, options) and the same budget and seed, with
default judging (selection level, no reader), and records:

* **found** — whether the defective build showed a failure of the planted class (operator + kind,
  :class:`ufuzz.backends.adapters.planted.PlantedClass`), and **executions to first failure** of that class (the
  execution count at which the campaign first recorded one);
* **false findings** — failures of the planted class on the clean twin: the twin is correct for the property
  the defect breaks, so each one is a finding that is not true.

Per strategy: bugs found per run (of the planted classes), per class the runs that found it and the mean
executions to its first failure over those runs, and the false findings on the clean twins. Outputs in ``out``:
``planted.json``, ``planted.md`` and ``runs/<pair>/<strategy>/{planted,clean}-r<i>-s<seed>/`` (campaign
directories; the planted backends are registered only inside the bench, so ``ufuzz replay`` cannot rebuild
them from another process).
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PlantedConfig", "render_planted", "run_planted"]


@dataclass
class PlantedConfig:
    budget: int = 500
    runs: int = 3
    strategies: tuple[str, ...] = ("full", "random", "query-only", "state-only", "no-feedback")
    out: str | None = None  # default reports/bench-planted
    base_seed: int = 0
    pairs: tuple[str, ...] | None = None  # None: every planted pair

    @property
    def out_dir(self) -> Path:
        return Path(self.out or "reports/bench-planted")


def _suite_path(setting: Any, out: Path) -> str | None:
    """The seed file of a setting's suite: None for the shipped suite, the plain world written into ``out``."""
    if setting.suite == "shipped":
        return None
    if setting.suite != "plain-world":
        raise ValueError(f"unknown planted suite {setting.suite!r}")
    from ufuzz.seeds.io import write_suite
    from ufuzz.seeds.planted_world import plain_world

    path = out / "plain_world.jsonl"
    if not path.is_file():
        write_suite(plain_world(), path, header={"generator": "ufuzz.seeds.planted_world.plain_world"})
    return str(path)


def _campaign(backend: str, setting: Any, seeds: str | None, strategy: str, budget: int, seed: int,
              run_dir: Path) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.strategies import apply_strategy

    if run_dir.exists():
        shutil.rmtree(run_dir)
    cfg = CampaignConfig(backend=backend, backend_options={"db": "memory", "retrieval": setting.retrieval,
                                                           **dict(setting.options)},
                         seeds=seeds, k=setting.k, budget=budget, seed=seed, out=str(run_dir))
    apply_strategy(cfg, strategy)
    c = Campaign(cfg)
    summary = c.run()
    return summary, list(c.failure_log)


def _one(pair: str, strategy: str, run: int, cfg: PlantedConfig, names: dict[str, tuple[str, str]],
         seeds: str | None) -> dict[str, Any]:
    from ufuzz.backends.adapters.planted import CLASSES, SETTINGS

    setting, cls = SETTINGS[pair], CLASSES[pair]
    seed = cfg.base_seed + run
    base = cfg.out_dir / "runs" / pair / strategy
    t0 = time.perf_counter()
    bad, bad_log = _campaign(names[pair][0], setting, seeds, strategy, cfg.budget, seed, base / f"planted-r{run}-s{seed}")
    good, good_log = _campaign(names[pair][1], setting, seeds, strategy, cfg.budget, seed, base / f"clean-r{run}-s{seed}")
    hits = [n for n, f in bad_log if cls.holds(f)]
    return {"pair": pair, "class": str(cls), "strategy": strategy, "run": run, "seed": seed,
            "found": bool(hits), "first": min(hits) if hits else None, "class_failures": len(hits),
            "other_failures": len(bad_log) - len(hits), "false_findings": sum(1 for _, f in good_log if cls.holds(f)),
            "clean_failures": len(good_log), "executions": bad["executions"], "status": bad["status"],
            "clean_status": good["status"], "errors": bad["errors"] + good["errors"],
            "wall_seconds": round(time.perf_counter() - t0, 3)}


def aggregate(runs: list[dict[str, Any]], pairs: list[str]) -> dict[str, Any]:
    """Per strategy: bugs found per run, per class found runs and mean executions to first failure, false
    findings on the clean twins."""
    out: dict[str, Any] = {}
    for strategy in dict.fromkeys(r["strategy"] for r in runs):
        rs = [r for r in runs if r["strategy"] == strategy]
        n_runs = len({r["run"] for r in rs})
        per_run = [sum(1 for r in rs if r["run"] == i and r["found"]) for i in sorted({r["run"] for r in rs})]
        classes = {}
        for pair in pairs:
            pr = [r for r in rs if r["pair"] == pair]
            firsts = [r["first"] for r in pr if r["found"]]
            classes[pair] = {"found_runs": len(firsts), "runs": len(pr),
                             "first_mean": statistics.fmean(firsts) if firsts else None,
                             "first_max": max(firsts) if firsts else None,
                             "false_findings": sum(r["false_findings"] for r in pr)}
        out[strategy] = {"runs": n_runs, "bugs_found": {"mean": statistics.fmean(per_run) if per_run else 0.0,
                                                        "min": min(per_run, default=0), "of": len(pairs)},
                         "false_findings": sum(r["false_findings"] for r in rs), "classes": classes}
    return out


def run_planted(cfg: PlantedConfig, *, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the planted benchmark, write ``planted.json`` and ``planted.md`` into ``cfg.out_dir``, return the
    result. ``ValueError`` for a bad strategy, pair, budget or run count."""
    from ufuzz.backends.adapters.planted import CLASSES, SETTINGS, register_all
    from ufuzz.engine.strategies import strategy_names

    say = echo or (lambda _s: None)
    if cfg.budget < 1 or cfg.runs < 1:
        raise ValueError("budget and runs must be at least 1")
    bad = [s for s in cfg.strategies if s not in strategy_names()]
    if bad:
        raise ValueError(f"unknown strateg{'y' if len(bad) == 1 else 'ies'} {bad}; known: {', '.join(strategy_names())}")
    pairs = list(cfg.pairs or CLASSES)
    unknown = [p for p in pairs if p not in CLASSES]
    if unknown:
        raise ValueError(f"unknown planted pair(s) {unknown}; known: {', '.join(CLASSES)}")
    names = register_all()
    out = cfg.out_dir
    out.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    t_all = time.perf_counter()

    def result(partial: bool) -> dict[str, Any]:
        return {"config": {"budget": cfg.budget, "runs": cfg.runs, "strategies": list(cfg.strategies),
                           "base_seed": cfg.base_seed, "pairs": pairs,
                           "classes": {p: str(CLASSES[p]) for p in pairs},
                           "settings": {p: {"suite": SETTINGS[p].suite, "retrieval": SETTINGS[p].retrieval,
                                            "k": SETTINGS[p].k, "options": dict(SETTINGS[p].options)} for p in pairs}},
                "partial": partial, "wall_seconds": round(time.perf_counter() - t_all, 3),
                "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "strategies": aggregate(runs, pairs), "runs": runs}

    for i in range(cfg.runs):
        for strategy in cfg.strategies:
            for pair in pairs:
                rec = _one(pair, strategy, i, cfg, names, _suite_path(SETTINGS[pair], out))
                runs.append(rec)
                say(f"{strategy} run {i} {pair}: " + (f"found at execution {rec['first']}" if rec["found"] else
                                                        "not found")
                    + f", {rec['false_findings']} false finding(s) on the clean twin, {rec['wall_seconds']:.1f} s")
            _write(result(partial=True), out)
    final = result(partial=False)
    _write(final, out)
    return final


def _rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    pairs = result["config"]["pairs"]
    head = ["strategy", "runs", "bugs found", *pairs, "false findings"]
    rows = []
    for strategy in result["config"]["strategies"]:
        agg = result["strategies"].get(strategy)
        if agg is None:
            continue
        cells = []
        for pair in pairs:
            c = agg["classes"][pair]
            first = f", first at {c['first_mean']:.0f}" if c["first_mean"] is not None else ""
            cells.append(f"{c['found_runs']}/{c['runs']}{first}")
        b = agg["bugs_found"]
        rows.append([strategy, str(agg["runs"]), f"{b['mean']:.1f} of {b['of']} (min {b['min']})", *cells,
                     str(agg["false_findings"])])
    return head, rows


def render_planted(result: dict[str, Any]) -> str:
    """Plain-text table: per strategy, bugs found per run, per planted class the runs that found it and the
    mean executions to its first failure, and false findings on the clean twins."""
    head, rows = _rows(result)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("")
    lines += [f"{p}: {c}" for p, c in result["config"]["classes"].items()]
    return "\n".join(lines)


def _write(result: dict[str, Any], out: Path) -> None:
    c = result["config"]
    head, rows = _rows(result)
    md = [f"# ufuzz bench --planted — budget {c['budget']}, {c['runs']} run(s) per strategy "
          f"(seeds {c['base_seed']}..{c['base_seed'] + c['runs'] - 1})", "",
          "Each planted pair is a bug planted in the embedded backend beside its clean twin (ufuzz.backends.adapters.planted). "
          "Per class: runs whose campaign on the defective build showed a failure of the planted class, and the mean "
          "executions to the first one; false findings: failures of the planted class on the clean twins (each one "
          "a finding that is not true). Default judging (selection level, no reader)."
          + (f" PARTIAL: {len(result['runs'])} campaign pairs so far." if result.get("partial") else ""), "",
          "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|",
          *("| " + " | ".join(r) + " |" for r in rows), "",
          *(f"- `{p}`: {cls}" for p, cls in c["classes"].items()), ""]
    (out / "planted.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str), encoding="utf-8")
    (out / "planted.md").write_text("\n".join(md), encoding="utf-8")
