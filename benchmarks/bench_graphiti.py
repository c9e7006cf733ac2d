"""Graphiti-on-Kuzu adapter: search latency and fork (snapshot copy) vs re-ingest for a 200-memory checkpoint;
with ``--storage``: what a state costs in memory and on disk.

    python benchmarks/bench_graphiti.py [--memories 200] [--queries 40]
    python benchmarks/bench_graphiti.py --storage [--cycles 40] [--calls 300]

``--storage`` uses the shipped suite's checkpoints and prints, per ``state_dir`` (disk, RAM scratch): resident
memory per open Kuzu database, RSS growth per retrieve on one state, fork time, bytes written per
fork + add + update + retrieve + release cycle (/proc/self/io write_bytes), and the cost of reopening a state
the live budget closed.

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

from ufuzz.backends.adapters.graphiti import GraphitiBackend  # noqa: E402
from ufuzz.backends.files import resident_mb, trim_heap  # noqa: E402
from ufuzz.model import Checkpoint, Entity, Fact, Memory  # noqa: E402
from ufuzz.seeds.io import load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

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


def rss_mb() -> float:
    trim_heap()
    return resident_mb()


def written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def storage(cycles: int, calls: int) -> None:
    cks = list(load_suite(ROOT / "seeds" / "default.jsonl").checkpoints.values())
    qs = ["Where does my sister live these days?", "Who works at Halcyra Health?", "What pet did my mentor adopt?"]
    with tempfile.TemporaryDirectory() as tmp:
        for state_dir in ("disk", "auto"):
            b = GraphitiBackend(Path(tmp) / state_dir, {"state_dir": state_dir, "live_budget_mb": 0})
            b.release(b.build(cks[0]))  # model load, first query plans
            r0, w0 = rss_mb(), written()
            t = time.perf_counter()
            hs = [b.build(ck) for ck in cks]
            build_s = (time.perf_counter() - t) / len(cks)
            per_db = (rss_mb() - r0) / len(cks)
            build_w = (written() - w0) / len(cks) / 2**20
            s = hs[1]
            for q in qs:
                b.retrieve(s, q, 5)
            r0 = rss_mb()
            for i in range(calls):
                b.retrieve(s, f"{qs[i % len(qs)]} {i}", 5)
            growth = (rss_mb() - r0) / calls * 1024
            fork_t, w0, t = [], written(), time.perf_counter()
            for i in range(cycles):
                a = time.perf_counter()
                f = b.fork(s)
                fork_t.append(time.perf_counter() - a)
                b.add(f, Memory(f"bx{i}", "My sister moved to Brask last spring.", "2024-01-01T00:00:00"))
                b.update(f, cks[1].memories[0].id, Memory(f"by{i}", "Greta now works in Brask.", "2024-02-01T00:00:00"))
                b.retrieve(f, qs[0], 5)
                b.release(f)
            cycle_s = (time.perf_counter() - t) / cycles
            cycle_w = (written() - w0) / cycles / 2**20
            st = b._states[hs[2]]
            st.driver.shutdown()
            st.driver = st.graphiti = None
            t = time.perf_counter()
            b.retrieve(hs[2], qs[0], 5)  # reopens the closed state
            reopen = time.perf_counter() - t
            r0 = rss_mb()
            for h in hs:
                b.release(h)
            freed = (r0 - rss_mb()) / len(hs)
            print(f"[state_dir={state_dir}] build {build_s:.2f} s, {build_w:.1f} MiB written per state | resident "
                  f"per open database {per_db:.0f} MB (freed on release {freed:.0f} MB) | RSS growth per retrieve "
                  f"{growth:.0f} KB over {calls} calls | fork median {statistics.median(fork_t) * 1000:.0f} ms | "
                  f"fork+add+update+retrieve+release {cycle_s * 1000:.0f} ms, {cycle_w:.2f} MiB written | "
                  f"reopen a closed state + retrieve {reopen * 1000:.0f} ms")
            b.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=200)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--storage", action="store_true", help="memory and disk cost of states (shipped suite)")
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args()
    if a.storage:
        storage(a.cycles, a.calls)
        return
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
