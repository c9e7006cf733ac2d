"""What running a backend in a worker process costs, and why native backends need it.

    python benchmarks/bench_worker.py              # overhead + restart on the embedded backend (BM25)
    python benchmarks/bench_worker.py --graphiti   # also: resident memory per open Kuzu state, before/after trim

Prints per-call overhead (in process vs through the worker), worker start time, and the cost of the first use
of a state after a recycle (rebuilt from its recipe). With ``--graphiti``: the resident size of one process
holding N open Graphiti/Kuzu states, after releasing them, and after ``malloc_trim`` (what the worker does after
every release).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from ufuzz.backends.adapters.embedded import EmbeddedBackend  # noqa: E402
from ufuzz.backends.worker import wrap  # noqa: E402
from ufuzz.seeds.io import load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUERY = "Where does my sister live these days?"


def rss_mb(pid: int | None = None) -> float:
    pages = int(Path(f"/proc/{pid or os.getpid()}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def per_call_us(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def overhead(n: int) -> None:
    suite = load_suite(ROOT / "seeds" / "default.jsonl")
    ck = next(iter(suite.checkpoints.values()))
    opts = {"retrieval": "bm25", "db": "memory"}
    with tempfile.TemporaryDirectory() as d:
        plain = EmbeddedBackend(Path(d) / "p", opts)
        s = plain.build(ck)
        t0 = time.perf_counter()
        w = wrap("embedded", EmbeddedBackend, Path(d) / "w", opts)
        start = time.perf_counter() - t0
        ws = w.build(ck)
        first = ck.memories[0].id
        rows = []
        for name, a, b in (("get", lambda: plain.get(s, first), lambda: w.get(ws, first)),
                           ("retrieve k=5", lambda: plain.retrieve(s, QUERY, 5), lambda: w.retrieve(ws, QUERY, 5)),
                           ("fork+release", lambda: plain.release(plain.fork(s)), lambda: w.release(w.fork(ws)))):
            rows.append((name, per_call_us(a, n), per_call_us(b, n)))
        restarts, rebuilds = [], []
        for _ in range(5):
            t = time.perf_counter()
            w._stop_worker()
            w._start()
            restarts.append(time.perf_counter() - t)
            t = time.perf_counter()
            w.retrieve(ws, QUERY, 5)  # rebuilds the state from its recipe in the new worker
            rebuilds.append(time.perf_counter() - t)
        w.close()
    print(f"embedded (bm25), checkpoint of {len(ck.memories)} memories, {n} calls each")
    print(f"{'call':14s} {'in process µs':>14s} {'worker µs':>10s} {'overhead µs':>12s}")
    for name, a, b in rows:
        print(f"{name:14s} {a:14.0f} {b:10.0f} {b - a:12.0f}")
    print(f"worker start (first): {start:.2f} s; restart: median {statistics.median(restarts):.2f} s; "
          f"first retrieve after restart (rebuild from recipe): median {statistics.median(rebuilds) * 1e3:.0f} ms")


def graphiti_memory(states: int) -> None:
    from ufuzz.backends.adapters.graphiti import GraphitiBackend
    from ufuzz.backends.conformance import tiny_checkpoint

    with tempfile.TemporaryDirectory() as d:
        b = GraphitiBackend(Path(d), {})
        b.retrieve(b.build(tiny_checkpoint()), QUERY, 5)
        base = rss_mb()
        hs = [b.build(tiny_checkpoint())]
        for _ in range(states - 1):
            hs.append(b.fork(hs[-1]))
            b.retrieve(hs[-1], QUERY, 5)
        full = rss_mb()
        for h in hs:
            b.release(h)
        released = rss_mb()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        trimmed = rss_mb()
        b.close()
    print(f"graphiti/Kuzu, {states} states open at once (6-memory checkpoint): "
          f"{(full - base) / states:.0f} MB resident per open state; base {base:.0f} MB, all open {full:.0f} MB, "
          f"released {released:.0f} MB, after malloc_trim {trimmed:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--graphiti", action="store_true", help="also measure Kuzu state memory")
    ap.add_argument("--states", type=int, default=20)
    a = ap.parse_args()
    overhead(a.calls)
    if a.graphiti:
        graphiti_memory(a.states)


if __name__ == "__main__":
    main()
