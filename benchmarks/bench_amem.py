"""A-Mem backend speed: ingest (build), retrieve, fork, on synthetic personal memories (no LLM).

    python benchmarks/bench_amem.py [--sizes 25,100] [--reps 2]

Prints seconds per memory ingested (A-Mem embeds each note twice: its neighbour search for evolution, then
the note itself), per retrieval and per fork. Needs the ``amem`` extra.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ufuzz.backends.adapters.amem import AMemBackend
from ufuzz.model import Checkpoint, Memory

NAMES = ["Lena", "Omar", "Pip", "Ada", "Bruno", "Chidi", "Dora", "Emil"]
PLACES = ["Velmora", "Tessaly Heights", "Orrin Bay", "Brask", "Quillstone", "Harrowgate"]


def checkpoint(n: int) -> Checkpoint:
    mems = tuple(Memory(f"m{i}", f"{NAMES[i % len(NAMES)]} visited {PLACES[i % len(PLACES)]} on trip {i}.",
                        f"2024-01-{1 + i % 28:02d}T{i % 24:02d}:00:00") for i in range(n))
    return Checkpoint(f"bench-{n}", mems, ())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="25,100")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    b = AMemBackend(Path(tempfile.mkdtemp(prefix="bench-amem-")), {})
    print(f"import + init: {time.perf_counter() - t0:.2f} s")
    b.build(checkpoint(2))  # warm the model
    for n in (int(x) for x in args.sizes.split(",")):
        ck = checkpoint(n)
        builds, rets, forks = [], [], []
        for _ in range(args.reps):
            t = time.perf_counter()
            s = b.build(ck)
            builds.append(time.perf_counter() - t)
            t = time.perf_counter()
            for q in ("Where did Lena go?", "Who visited Brask?", "trip 7"):
                b.retrieve(s, q, 5)
            rets.append((time.perf_counter() - t) / 3)
            t = time.perf_counter()
            f = b.fork(s)
            forks.append(time.perf_counter() - t)
            b.release(f)
            b.release(s)
        mb = statistics.median(builds)
        print(f"n={n:4d}  build {mb:7.2f} s ({1000 * mb / n:6.1f} ms/memory, {n / mb:5.1f} memories/s)  "
              f"retrieve k=5 {1000 * statistics.median(rets):6.1f} ms  fork {1000 * statistics.median(forks):6.1f} ms")
    b.close()


if __name__ == "__main__":
    main()
