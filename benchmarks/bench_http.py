"""Cost of the http backend's JSON paths: the plain-step walk against python-jsonpath's own evaluation.

Prints (1) the time to read ``$.results[*].id`` from a response of N results, walked directly and evaluated by
python-jsonpath (which builds a match object with a normalized path for every node), and (2) the latency of
the http backend's ``retrieve`` (k=10) and ``list`` against the local product server of the tests
(tests/support/http_product_server.py, loopback) on a state of N memories, as shipped and with every path
evaluated by python-jsonpath.

    python benchmarks/bench_http.py [--sizes 10,100,1000] [--calls 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import timeit
from pathlib import Path

from tests.support.http_product_server import start_product_server
from ufuzz.backends.adapters import http
from ufuzz.backends.adapters.http import paths
from ufuzz.model import Checkpoint, Memory

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "product.toml"
TOKEN = "bench-token"


def path_cost(n: int) -> tuple[float, float]:
    doc = {"results": [{"id": f"m{i}", "text": f"memory number {i}", "score": 1.0 / (i + 1)} for i in range(n)]}
    jp = http.JsonPath.parse("$.results[*].id")
    assert jp.find(doc) == jp.compiled.findall(doc)
    number = max(5, 20_000 // max(n, 1))
    walk = min(timeit.repeat(lambda: jp.find(doc), number=number, repeat=3)) / number
    lib = min(timeit.repeat(lambda: jp.compiled.findall(doc), number=number, repeat=3)) / number
    return walk, lib


def median_ms(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def backend_cost(server, n: int, calls: int, library_only: bool) -> tuple[float, float]:
    plain = paths._plain_steps
    if library_only:
        paths._plain_steps = lambda path: None  # every path evaluated by python-jsonpath (paths parse at load)
    try:
        with tempfile.TemporaryDirectory() as d:
            b = http.HttpBackend(Path(d), {"config": str(EXAMPLE), "base_url": server.base_url})
            ck = Checkpoint("bench", tuple(Memory(f"m{i}", f"Person {i} lives in town {i % 37}.",
                                                  f"2024-01-01T{i % 24:02d}:00:00") for i in range(n)), (), ())
            s = b.build(ck)
            retrieve = median_ms(lambda: b.retrieve(s, "Where does person 7 live?", 10), calls)
            listing = median_ms(lambda: b.list(s), calls)
            b.close()
    finally:
        paths._plain_steps = plain
    return retrieve, listing


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print("reading $.results[*].id from a response of N results")
    print(f"{'N':>6s} {'walk µs':>10s} {'python-jsonpath µs':>19s} {'ratio':>6s}")
    for n in sizes:
        walk, lib = path_cost(n)
        print(f"{n:6d} {walk * 1e6:10.1f} {lib * 1e6:19.1f} {lib / walk:6.0f}")
    os.environ["PRODUCT_API_TOKEN"] = TOKEN
    print(f"\nhttp backend on the local product server, median of {args.calls} calls (ms)")
    print(f"{'N':>6s} {'retrieve':>9s} {'(library)':>10s} {'list':>8s} {'(library)':>10s}")
    with start_product_server(TOKEN) as server:
        for n in sizes:
            r, li = backend_cost(server, n, args.calls, library_only=False)
            r_lib, li_lib = backend_cost(server, n, args.calls, library_only=True)
            print(f"{n:6d} {r:9.2f} {r_lib:10.2f} {li:8.2f} {li_lib:10.2f}")


if __name__ == "__main__":
    main()
