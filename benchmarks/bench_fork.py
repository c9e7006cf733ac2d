"""Fork and retrieval cost of the embedded backend at 1k / 10k / 100k memories.

Prints, per size and retrieval mode: build time, first retrieve on the built state (materializes its view),
fork cost (mean µs over N forks), first retrieve after a fork (with and without one write in the fork),
and steady-state retrieve latency. Memory texts are drawn from 2,000 distinct synthetic sentences, each
embedded once by the real all-MiniLM-L6-v2 model (the persistent embedding cache makes reruns fast), so
every vector is real model output.

    python benchmarks/bench_fork.py [--sizes 1000,10000,100000] [--forks 1000] [--modes dense,bm25,hybrid]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from ufuzz.backends.adapters.embedded import EmbeddedBackend
from ufuzz.backends.embedding import default_embedder
from ufuzz.model import Checkpoint, Memory

NAMES = ["Lena", "Omar", "Tomas", "Mira", "Priya", "Jonas", "Aiko", "Felix", "Sana", "Ravi", "Elin", "Marco",
         "Noor", "Hugo", "Ines", "Kofi", "Yara", "Bram", "Zoe", "Ivo"]
TEMPLATES = ["{n} lives in {p}.", "{n} works as a {j} in {p}.", "{n}'s favourite food is {f}.",
             "{n} visited {p} last {d}.", "I met {n} for coffee on {d}.", "{n} is learning to cook {f}.",
             "{n} moved to {p} with a friend who is a {j}.", "My neighbour {n} grows {f} in the garden.",
             "{n} plays chess every {d} near {p}.", "{n} wants to become a {j}."]
PLACES = ["Velmora", "Brask", "Orrin Bay", "Tessaly Heights", "Dunmore", "Quillstone", "Fell Street", "Marrow",
          "Ashgrove", "Kestrel Point"]
JOBS = ["glassblower", "nurse", "pilot", "baker", "carpenter", "teacher", "chemist", "gardener"]
FOODS = ["dumplings", "lentil soup", "tomatoes", "sushi", "ramen", "plums", "paella", "pumpkins"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
QUERIES = [f"{q} {n}?" for n in NAMES[:10] for q in ("Where does", "What food does", "Which job does",
                                                        "When did I see", "What does")]


def sentences(n: int, rng: random.Random) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add(rng.choice(TEMPLATES).format(n=rng.choice(NAMES), p=rng.choice(PLACES), j=rng.choice(JOBS),
                                             f=rng.choice(FOODS), d=rng.choice(DAYS)))
    return sorted(out)


def mean_us(samples: list[float]) -> float:
    return 1e6 * sum(samples) / len(samples)


def bench(size: int, mode: str, texts: list[str], forks: int, rng: random.Random, embedder) -> dict:
    ck = Checkpoint(f"bench{size}", tuple(Memory(f"m{j}", texts[rng.randrange(len(texts))],
                                                 f"2024-01-01T{j % 24:02d}:00:00") for j in range(size)), ())
    with tempfile.TemporaryDirectory() as tmp:
        b = EmbeddedBackend(Path(tmp), {"retrieval": mode}, embedder=embedder)
        t = time.perf_counter()
        root = b.build(ck)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        b.retrieve(root, QUERIES[0], 10)
        first_root_ms = 1e3 * (time.perf_counter() - t)

        fork_t = []
        handles = []
        for _ in range(forks):
            t = time.perf_counter()
            handles.append(b.fork(root))
            fork_t.append(time.perf_counter() - t)
        for h in handles:
            b.release(h)

        after_fork, after_write = [], []
        for i in range(20):
            h = b.fork(root)
            t = time.perf_counter()
            b.retrieve(h, QUERIES[i % len(QUERIES)], 10)
            after_fork.append(time.perf_counter() - t)
            h2 = b.fork(root)
            b.update(h2, f"m{i}", Memory(f"m{i}~u", texts[i], "2024-02-01T00:00:00"))
            t = time.perf_counter()
            b.retrieve(h2, QUERIES[i % len(QUERIES)], 10)
            after_write.append(time.perf_counter() - t)
            b.release(h)
            b.release(h2)

        for q in QUERIES:  # warm the query embeddings
            b.retrieve(root, q, 10)
        steady = []
        for q in QUERIES * 2:
            t = time.perf_counter()
            b.retrieve(root, q, 10)
            steady.append(time.perf_counter() - t)
        b.close()
    return {"size": size, "mode": mode, "build_s": build_s, "first_root_ms": first_root_ms,
            "fork_us": mean_us(fork_t), "after_fork_ms": mean_us(after_fork) / 1e3,
            "after_write_ms": mean_us(after_write) / 1e3, "retrieve_ms": mean_us(steady) / 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--forks", type=int, default=1000)
    ap.add_argument("--modes", default="dense,bm25,hybrid")
    ap.add_argument("--distinct", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(7)
    texts = sentences(args.distinct, rng)
    embedder = default_embedder()
    t = time.perf_counter()
    embedder.encode(texts + QUERIES)
    print(f"embedded {len(texts)} distinct memory texts + {len(QUERIES)} queries in "
          f"{time.perf_counter() - t:.1f} s (model calls {embedder.model_calls}, disk hits {embedder.disk_hits})")
    header = (f"{'memories':>9} {'mode':>6} {'build s':>8} {'1st ret root ms':>15} {'fork µs':>8} "
              f"{'1st ret fork ms':>15} {'1st ret fork+write ms':>21} {'retrieve ms':>11}")
    print(header)
    print("-" * len(header))
    for size in (int(s) for s in args.sizes.split(",")):
        for mode in args.modes.split(","):
            r = bench(size, mode, texts, args.forks, rng, embedder)
            print(f"{r['size']:>9} {r['mode']:>6} {r['build_s']:>8.2f} {r['first_root_ms']:>15.1f} "
                  f"{r['fork_us']:>8.0f} {r['after_fork_ms']:>15.2f} {r['after_write_ms']:>21.2f} "
                  f"{r['retrieve_ms']:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
