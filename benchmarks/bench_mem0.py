"""Restore (fork = copy of a state's directories) vs re-ingest for the mem0 backend.

    python benchmarks/bench_mem0.py [--sizes 25,100,300] [--reps 3]

For each checkpoint size N it measures, on the real mem0 2.2.1 stack (qdrant local + MiniLM, no LLM):
  build      open a new mem0 Memory + N x add(infer=False)      (what the executor's rebuild fallback costs)
  fork       copy the state's directory (sqlite online backup) + open a Memory on the copy
  copy only  the directory copy part of fork
  open only  Memory.from_config on an existing directory (embedder load + qdrant load)
  retrieve   one search, k=10
Figures are medians over --reps runs, in seconds. Nothing here is asserted; CI does not run it.
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

from ufuzz.backends.adapters.mem0 import Mem0Backend  # noqa: E402
from ufuzz.backends.files import copy_state_dir  # noqa: E402
from ufuzz.model import Checkpoint, Memory  # noqa: E402

PEOPLE = ["Lena", "Omar", "Pip", "Ines", "Tomas", "Yara", "Bo", "Kasia"]
PLACES = ["Velmora", "Brask", "Orrin Bay", "Tessaly Heights", "Lisk", "Quillstone", "Harrowgate", "Mirefield"]


def checkpoint(n: int) -> Checkpoint:
    mems = tuple(
        Memory(f"m{i:04d}", f"{PEOPLE[i % 8]} mentioned visiting {PLACES[(i * 3) % 8]} on trip {i}.",
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
    ap.add_argument("--threads", type=int, default=1, help="torch threads (one is fastest for single encodes)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    import torch

    torch.set_num_threads(args.threads)
    print(f"mem0 backend, torch threads {torch.get_num_threads()}")

    with tempfile.TemporaryDirectory(prefix="bench-mem0-") as tmp:
        b = Mem0Backend(Path(tmp) / "campaign")
        t_first, warm = timed(lambda: b.build(checkpoint(3)))  # first open loads torch + the model
        b.release(warm)
        print(f"first state (imports, model load): {t_first:.2f} s")
        print(f"{'N':>5} {'build':>8} {'fork':>8} {'copy':>8} {'open':>8} {'retrieve':>9} {'build/fork':>10}")
        for n in sizes:
            ck = checkpoint(n)
            rows: dict[str, list[float]] = {"build": [], "fork": [], "copy": [], "open": [], "retrieve": []}
            for _ in range(args.reps):
                dt, s = timed(lambda ck=ck: b.build(ck))
                rows["build"].append(dt)
                dt, f = timed(lambda s=s: b.fork(s))
                rows["fork"].append(dt)
                if len(b.list(f)) != n:
                    raise SystemExit(f"fork of {n} memories lists {len(b.list(f))}")
                dst = Path(tmp) / f"copy-{n}-{len(rows['copy'])}"
                dt, _ = timed(lambda s=s, dst=dst: copy_state_dir(b._states[s].path, dst))
                rows["copy"].append(dt)
                dt, mem = timed(lambda dst=dst: b._open(dst))
                rows["open"].append(dt)
                b._close_memory(mem)
                dt, _ = timed(lambda f=f: b.retrieve(f, "Where did Lena go?", 10))
                rows["retrieve"].append(dt)
                b.release(f)
                b.release(s)
            med = {k: statistics.median(v) for k, v in rows.items()}
            print(f"{n:>5} {med['build']:>8.3f} {med['fork']:>8.3f} {med['copy']:>8.3f} {med['open']:>8.3f} "
                  f"{med['retrieve']:>9.3f} {med['build'] / med['fork']:>9.1f}x")
        b.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
