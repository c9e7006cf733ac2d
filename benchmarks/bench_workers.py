"""Parallel campaigns: executions/s with ``--workers 1`` against ``--workers 2`` (and more with ``--workers``).

    python benchmarks/bench_workers.py [--targets embedded,http,graphiti] [--workers 1,2] [--budget 400]
                                       [--http-delay 0.02] [--graphiti-budget 120] [--seed 1]

Targets, each a whole campaign on the shipped suite:

* ``embedded`` — the embedded backend (dense retrieval, warm embedding cache): calls are CPU in the fuzzer's
  machine, so the lanes share its cores with the coordinator;
* ``http`` — the HTTP backend against the tests' memory product (tests/support/http_product_server.py) on
  loopback, every request answered after ``--http-delay`` seconds: a backend whose calls wait on I/O, the case
  parallel lanes are for;
* ``graphiti`` — Graphiti on Kuzu (direct writes, no LLM), at a small budget.

Per run it prints executions, set-up seconds (until the first batch is applied: with workers this includes
starting the lanes, each loading its own backend), run seconds after that, and executions/s over the run
part; then the speed-up of each N over N=1. On a shared machine the figures move with the load: say so when
quoting them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"


def campaign(backend: str, options: dict[str, Any], budget: int, workers: int, seed: int, out: Path) -> dict:
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.parallel.batching import DEFAULT_BATCH

    # one batch for every N, so that every N runs the same campaign (not given, one lane runs step by step)
    c = Campaign(CampaignConfig(backend=backend, backend_options=options, budget=budget, seed=seed, out=str(out),
                                workers=workers, batch=DEFAULT_BATCH))
    first: dict[str, float] = {}

    def mark(progress: Any) -> None:
        if not first:
            first["t"], first["n"] = time.perf_counter(), progress.executions

    t0 = time.perf_counter()
    summary = c.run(on_progress=mark)
    end = time.perf_counter()
    t1, n1 = first.get("t", end), first.get("n", 0)
    run_s = end - t1
    done = summary["executions"] - n1
    return {"status": summary["status"], "executions": summary["executions"], "setup_s": t1 - t0, "run_s": run_s,
            "rate": done / run_s if run_s > 0 else float("nan"), "failures": summary["unique_failures"],
            "errors": summary["errors"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="embedded,http,graphiti")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--graphiti-budget", type=int, default=120)
    ap.add_argument("--http-delay", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    ns = [int(x) for x in a.workers.split(",")]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'target':<10} {'N':>3} {'status':<13} {'execs':>6} {'set-up s':>9} {'run s':>8} {'execs/s':>9} "
          f"{'failures':>8} {'errors':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for target in a.targets.split(","):
            rates: dict[int, float] = {}
            for n in ns:
                out = Path(tmp) / f"{target}-{n}"
                if target == "embedded":
                    r = campaign("embedded", {}, a.budget, n, a.seed, out)
                elif target == "graphiti":
                    r = campaign("graphiti", {}, a.graphiti_budget, n, a.seed, out)
                elif target == "http":
                    from tests.support.http_product_server import start_product_server

                    os.environ["PRODUCT_API_TOKEN"] = TOKEN
                    with start_product_server(TOKEN) as srv:
                        srv.delay = a.http_delay
                        r = campaign("http", {"config": str(ROOT / "examples" / "product.toml"),
                                              "base_url": srv.base_url}, a.budget, n, a.seed, out)
                else:
                    raise SystemExit(f"unknown target {target!r}: embedded, http or graphiti")
                rates[n] = r["rate"]
                print(f"{target:<10} {n:>3} {r['status']:<13} {r['executions']:>6} {r['setup_s']:>9.1f} "
                      f"{r['run_s']:>8.1f} {r['rate']:>9.1f} {r['failures']:>8} {r['errors']:>6}", flush=True)
            base = rates.get(1)
            if base:
                print("  speed-up over N=1: " + ", ".join(f"N={n}: {rates[n] / base:.2f}x" for n in ns if n != 1))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
