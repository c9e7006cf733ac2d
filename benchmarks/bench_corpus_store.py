"""Throughput of the corpus store on a SQLite file: commit-per-record writes and the status summary.

Run: python benchmarks/bench_corpus_store.py [N]   (prints figures; not a test)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ufuzz.corpus.failures import FailureStore
from ufuzz.corpus.store import CorpusStore, default_url
from ufuzz.model import Checkpoint, Execution, Memory


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = default_url(Path(tmp) / "camp")
        store = CorpusStore(url)
        cid = store.start_campaign("bench", config={}, backend={"name": "bench"}, seed=0, budget=n)
        store.record_checkpoint(cid, Checkpoint("cp", tuple(Memory(f"m{i}", f"t{i}", "2024-01-01")
                                                            for i in range(200)), ()))
        fs = FailureStore(url, cid)
        t0 = time.perf_counter()
        for i in range(n):
            ex = Execution(case_id=f"x{i}", state_key="s", query="q", top_ids=[f"m{(i + j) % 200}" for j in range(5)],
                           top_scores=[0.5] * 5, top_texts=["t"] * 5, response="r")
            store.record_execution(cid, ex, checkpoint_id="cp")
        t1 = time.perf_counter()
        for i in range(n):
            store.record_feedback(cid, f"x{i}", {"coverage": 1, "novelty": True, "divergence": 0.3}, i % 3 == 0)
        t2 = time.perf_counter()
        for i in range(n):
            fs.record_failure(f"k{i % 50}", case_id=f"x{i}", seed_id="s", operator="op", kind="k", stage="s", seq=i)
        t3 = time.perf_counter()
        summary = store.summary(cid)
        t4 = time.perf_counter()
        print(f"executions   {n / (t1 - t0):8.0f} records/s (commit each)")
        print(f"feedback     {n / (t2 - t1):8.0f} records/s (commit each)")
        print(f"failures     {n / (t3 - t2):8.0f} upserts/s (50 keys)")
        print(f"summary      {(t4 - t3) * 1000:8.1f} ms over {summary['executions']} executions; "
              f"coverage {summary['coverage']['reached']}/{summary['coverage']['total']}")
        fs.close()
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
