"""Graphiti-on-Kuzu adapter: search latency and fork (snapshot copy) vs re-ingest for a 200-memory checkpoint.

    python benchmarks/bench_graphiti.py [--memories 200] [--queries 40]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ufuzz.backends.graphiti import GraphitiBackend  # noqa: E402
from ufuzz.model import Checkpoint, Entity, Fact, Memory  # noqa: E402

PEOPLE = ["Lena", "Omar", "Ravi", "Mia", "Tomas", "Anya", "Jun", "Sofia", "Kai", "Noor"]
CITIES = ["Velmora", "Brask", "Orrin Bay", "Tessaly Heights", "Quarn", "Ostrel", "Miravel", "Dunholt"]
JOBS = ["glassblower", "nurse", "pilot", "baker", "welder", "librarian", "chemist", "tailor"]


def checkpoint(n: int) -> Checkpoint:
    mems, facts = [], []
    for i in range(n):
        p = PEOPLE[i % len(PEOPLE)]
        ts = f"2024-{1 + (i // 28) % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00"
        kind = i % 4
        if kind == 0:
            c = CITIES[(i // 4) % len(CITIES)]
            mems.append(Memory(f"m{i:03d}", f"{p} moved to {c} this year.", ts))
            facts.append(Fact(p, "city", c, (f"m{i:03d}",), True, "city", ts))
        elif kind == 1:
            j = JOBS[(i // 4) % len(JOBS)]
            mems.append(Memory(f"m{i:03d}", f"{p} works as a {j} now.", ts))
            facts.append(Fact(p, "job", j, (f"m{i:03d}",), True, "job", ts))
        elif kind == 2:
            mems.append(Memory(f"m{i:03d}", f"I had lunch with {p} and we talked about music #{i}.", ts))
        else:
            mems.append(Memory(f"m{i:03d}", f"Reminder {i}: water the plants and call the bank.", ts))
    return Checkpoint("ck-bench", tuple(mems), tuple(facts), tuple(Entity(p, "person") for p in PEOPLE))


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=200)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    ck = checkpoint(a.memories)
    queries = [f"Where does {PEOPLE[i % len(PEOPLE)]} live?" if i % 2 == 0 else
               f"What is {PEOPLE[i % len(PEOPLE)]}'s job?" for i in range(a.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        warm = GraphitiBackend(Path(tmp) / "warm")
        warm.build(Checkpoint("w", ck.memories[:2], ()))
        print(f"model load + first tiny build: {time.perf_counter() - t:.2f} s")
        warm.close()
        for rr in ("cross_encoder", "rrf", "mmr"):
            b = GraphitiBackend(Path(tmp) / rr, {"reranker": rr})
            builds = []
            for _ in range(a.repeats):
                t = time.perf_counter()
                s = b.build(ck)
                builds.append(time.perf_counter() - t)
                b.release(s)
            s = b.build(ck)
            size = sum(f.stat().st_size for f in b.stored_files(s)) / 2**20
            forks, releases = [], []
            for _ in range(a.repeats):
                t = time.perf_counter()
                f = b.fork(s)
                forks.append(time.perf_counter() - t)
                t = time.perf_counter()
                b.release(f)
                releases.append(time.perf_counter() - t)
            b.retrieve(s, "warm-up query", 10)
            lat = []
            for q in queries:
                t = time.perf_counter()
                b.retrieve(s, q, 10)
                lat.append(time.perf_counter() - t)
            again = []
            for q in queries:
                t = time.perf_counter()
                b.retrieve(s, q, 10)
                again.append(time.perf_counter() - t)
            f = b.fork(s)
            same = all([r.id for r in b.retrieve(s, q, 10)] == [r.id for r in b.retrieve(f, q, 10)]
                       for q in queries[:10])
            print(f"[{rr}] {a.memories} memories, db {size:.1f} MiB | re-ingest (build) median "
                  f"{statistics.median(builds):.3f} s | fork median {statistics.median(forks) * 1000:.0f} ms "
                  f"(release {statistics.median(releases) * 1000:.0f} ms) | search k=10 median "
                  f"{statistics.median(lat) * 1000:.1f} ms p95 {pct(lat, 0.95) * 1000:.1f} ms (repeat query "
                  f"median {statistics.median(again) * 1000:.1f} ms) | fork ranks identically: {same}")
            b.close()


if __name__ == "__main__":
    main()
