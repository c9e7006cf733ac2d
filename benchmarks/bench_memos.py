"""Build, fork and retrieve on the MemOS backend (MemoryOS 2.0.33 GeneralTextMemory, embedded Qdrant + MiniLM).

    python benchmarks/bench_memos.py [--sizes 25,100,300] [--reps 3]

Needs the ``memos`` extra (a virtualenv of its own: MemoryOS pins transformers<5 and openai<2). For each
checkpoint size N, on the real library with direct writes (no LLM):
  cold build  open a new GeneralTextMemory + add N items, none of the texts embedded before in this process
  build       the same checkpoint again (what a campaign's rebuilds cost: the embedder memo has the vectors)
  fork        copy the state's Qdrant directory (sqlite online backup) + open a GeneralTextMemory on the copy
  retrieve    one search, k=10, a query embedded before (the memo has its vector)
  new query   one search, k=10, a query never seen before (includes encoding it)
Figures are medians over --reps runs (cold build: one run per size), in seconds. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ufuzz.backends.adapters.memos import MemosBackend  # noqa: E402
from ufuzz.model import Checkpoint, Memory  # noqa: E402

PEOPLE = ["Lena", "Omar", "Pip", "Ines", "Tomas", "Yara", "Bo", "Kasia"]
PLACES = ["Velmora", "Brask", "Orrin Bay", "Tessaly Heights", "Lisk", "Quillstone", "Harrowgate", "Mirefield"]


def checkpoint(n: int) -> Checkpoint:
    mems = tuple(
        Memory(f"m{i:04d}", f"{PEOPLE[i % 8]} mentioned visiting {PLACES[(i * 3) % 8]} on trip {i} of {n}.",
               f"2024-{1 + i // 280 % 12:02d}-{1 + i // 10 % 28:02d}T{i % 24:02d}:00:00")
        for i in range(n))
    return Checkpoint(f"ck-{n}", mems, ())


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="25,100,300")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    ok, hint = MemosBackend.dependencies_installed()
    if not ok:
        raise SystemExit(f"MemOS is not installed: {hint}")
    with tempfile.TemporaryDirectory(prefix="bench-memos-") as tmp:
        b = MemosBackend(Path(tmp) / "campaign")
        t_first, warm = timed(lambda: b.build(checkpoint(3)))  # imports MemOS, loads torch + the model
        b.release(warm)
        print(f"MemOS backend; first state (imports, model load): {t_first:.2f} s")
        print(f"{'N':>5} {'cold build':>10} {'build':>8} {'fork':>8} {'retrieve':>9} {'new query':>9} {'build/fork':>10}")
        for n in sizes:
            ck = checkpoint(n)
            cold, s = timed(lambda ck=ck: b.build(ck))
            b.release(s)
            rows: dict[str, list[float]] = {"build": [], "fork": [], "retrieve": [], "new": []}
            for _ in range(args.reps):
                dt, s = timed(lambda ck=ck: b.build(ck))
                rows["build"].append(dt)
                dt, f = timed(lambda s=s: b.fork(s))
                rows["fork"].append(dt)
                if len(b.list(f)) != n:
                    raise SystemExit(f"fork of {n} memories lists {len(b.list(f))}")
                dt, _ = timed(lambda f=f: b.retrieve(f, "Where did Lena go?", 10))
                rows["retrieve"].append(dt)
                fresh = f"Which places did {PEOPLE[len(rows['new']) % 8]} visit on trip {n}-{len(rows['new'])}?"
                dt, _ = timed(lambda f=f, q=fresh: b.retrieve(f, q, 10))
                rows["new"].append(dt)
                b.release(f)
                b.release(s)
            med = {k: statistics.median(v) for k, v in rows.items()}
            print(f"{n:>5} {cold:>10.3f} {med['build']:>8.3f} {med['fork']:>8.3f} {med['retrieve']:>9.3f} {med['new']:>9.3f} "
                  f"{med['build'] / med['fork']:>9.1f}x")
        b.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
