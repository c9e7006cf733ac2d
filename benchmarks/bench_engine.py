"""Throughput of a whole campaign on the embedded backend (default: budget 8000, dense retrieval).

    python benchmarks/bench_engine.py [--budget 8000] [--retrieval dense] [--seed 1]

Prints wall time, executions per second and where the time went. Run on an otherwise idle machine; the
first run also fills the persistent embedding cache (reported separately as a cold run when the cache is
empty).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=8000)
    ap.add_argument("--retrieval", default="dense", choices=["dense", "bm25", "hybrid"])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    from ufuzz.backends.embedding import load_model
    from ufuzz.engine.campaign import Campaign, CampaignConfig

    t0 = time.perf_counter()
    load_model()  # the model load is counted apart from the campaign
    load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cfg = CampaignConfig(budget=args.budget, seed=args.seed, out=os.path.join(tmp, "c"),
                             backend_options={"retrieval": args.retrieval})
        c = Campaign(cfg)
        t1 = time.perf_counter()
        s = c.run()
        wall = time.perf_counter() - t1
        execs = c.store.executions(c.campaign_id)
        backend_s = sum(e.execution.seconds for e in execs)
    print(f"embedded/{args.retrieval} budget {args.budget} seed {args.seed}")
    print(f"  model load             {load:8.2f} s")
    print(f"  campaign wall time     {wall:8.2f} s")
    print(f"  executions             {s['executions']:8d}  ({s['executions'] / wall:.1f} executions/s)")
    print(f"  time in retrieve+read  {backend_s:8.2f} s  ({100 * backend_s / wall:.0f}% of wall)")
    print(f"  valid / rejected       {s['mutants_valid']} / {s['mutants_rejected']}; retained {s['retained']}")
    print(f"  coverage               {s['coverage']}/{s['coverage_total']}")
    print(f"  unique failures        {s['unique_failures']}  {s['failures_by_operator']}")


if __name__ == "__main__":
    main()
