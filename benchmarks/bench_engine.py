"""Engine throughput: executions/s, set-up time and engine overhead of whole campaigns on the embedded backend.

    python benchmarks/bench_engine.py [--budget 2000] [--retrieval dense] [--seed 1]
                                      [--suite shipped] [--suite synth:250] [--suite locomo:PATH] [--cold]

For each suite it runs one campaign and prints:

* **set-up** — wall and CPU seconds from ``run()`` until the first task (suite loading is reported apart): the
  preflight round trip, operators' obligations, recording seeds and checkpoints, the first snapshot;
* **executions/s** — executions over the campaign's wall time, and over its CPU time (the figure that does not
  depend on what else the machine runs);
* **engine overhead** — the share of the campaign's time spent outside backend calls (the fuzzer's own work:
  scheduling, mutating, validating, judging, recording): 1 - (time inside the backend's protocol methods) /
  (campaign time), in wall time and in CPU time. The backend's time is measured around every protocol call, so
  it includes the adapter (and, for the embedded backend, the embedding model).
* where the rest went: corpus commits (write windows) and resume snapshots.

Suites: ``shipped`` (seeds/default.jsonl), ``synth:N`` (``ufuzz seeds synth --personas N``; 250 personas = 2,000
seeds), ``locomo:PATH`` (a LoCoMo file imported with ``ufuzz seeds import locomo``). The persistent embedding
cache is used as configured (warm after the first run); ``--cold`` points it at an empty temporary directory.
Run it on an otherwise idle machine; on a shared one the CPU figures are the ones to compare.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ("build", "fork", "release", "retrieve", "answer", "add", "update", "delete", "get", "list")


class Timed:
    """Wraps a backend: every protocol call is timed (wall), by method."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds: dict[str, float] = dict.fromkeys(PROTOCOL, 0.0)
        self.cpu = 0.0
        self.calls: dict[str, int] = dict.fromkeys(PROTOCOL, 0)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in PROTOCOL:
            return attr

        def timed(*args: Any, **kw: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return attr(*args, **kw)
            finally:
                self.seconds[name] += time.perf_counter() - t0
                self.cpu += time.thread_time() - c0
                self.calls[name] += 1

        return timed


def _suite(spec: str, tmp: Path) -> tuple[str, Any, float]:
    from ufuzz.seeds.io import load_suite

    t0 = time.perf_counter()
    if spec == "shipped":
        suite = load_suite(ROOT / "seeds" / "default.jsonl")
    elif spec.startswith("synth:"):
        from ufuzz.seeds.synth import synthesize

        suite = synthesize(personas=int(spec.split(":", 1)[1]), seed=1)
    elif spec.startswith("locomo:"):
        from ufuzz.seeds.importers import import_file

        suite = import_file("locomo", spec.split(":", 1)[1]).suite
    else:
        raise SystemExit(f"unknown suite {spec!r}: shipped, synth:N or locomo:PATH")
    return spec, suite, time.perf_counter() - t0


def run_one(spec: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from ufuzz.backends.adapters.embedded import EmbeddedBackend
    from ufuzz.corpus.window import WriteWindow
    from ufuzz.engine.campaign import Campaign, CampaignConfig
    from ufuzz.engine.journal import Journal

    name, suite, load_s = _suite(spec, tmp)
    out = tmp / name.replace(":", "-").replace("/", "_")
    backend = EmbeddedBackend(out / "backend-bench", {"retrieval": args.retrieval})
    timed = Timed(backend)
    cfg = CampaignConfig(budget=args.budget, seed=args.seed, out=str(out), backend_options={"retrieval": args.retrieval})
    campaign = Campaign(cfg, suite=suite, backend=timed)  # type: ignore[arg-type]
    marks: dict[str, float] = {}
    flush = {"s": 0.0, "n": 0}
    snap = {"s": 0.0, "n": 0}
    original_flush, original_snapshot = WriteWindow.flush, Journal.snapshot

    def timed_flush(self, extra=None):  # noqa: ANN001
        t0 = time.perf_counter()
        try:
            return original_flush(self, extra)
        finally:
            flush["s"] += time.perf_counter() - t0
            flush["n"] += 1

    def timed_snapshot(self, state):  # noqa: ANN001
        t0 = time.perf_counter()
        try:
            return original_snapshot(self, state)
        finally:
            snap["s"] += time.perf_counter() - t0
            snap["n"] += 1

    def first(progress: Any) -> None:
        marks.setdefault("first_step_wall", time.perf_counter())
        marks.setdefault("first_step_cpu", time.process_time())

    WriteWindow.flush, Journal.snapshot = timed_flush, timed_snapshot
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        summary = campaign.run(on_progress=first)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        WriteWindow.flush, Journal.snapshot = original_flush, original_snapshot
    setup_wall = marks.get("first_step_wall", t0 + wall) - t0
    setup_cpu = marks.get("first_step_cpu", c0 + cpu) - c0
    run_wall, run_cpu = wall - setup_wall, cpu - setup_cpu
    inside = sum(timed.seconds.values())
    return {"suite": name, "seeds": len(suite.seeds), "memories": sum(len(c.memories) for c in suite.checkpoints.values()),
            "load_s": load_s, "setup_wall": setup_wall, "setup_cpu": setup_cpu, "wall": wall, "cpu": cpu,
            "run_wall": run_wall, "run_cpu": run_cpu, "executions": summary["executions"], "status": summary["status"],
            "backend_s": inside, "backend_cpu": timed.cpu, "calls": timed.calls, "by_call": timed.seconds, "flush_s": flush["s"],
            "flushes": flush["n"], "snapshot_s": snap["s"], "snapshots": snap["n"],
            "unique_failures": summary["unique_failures"], "obligations": summary["obligations"]}


def report(r: dict[str, Any]) -> None:
    ex = r["executions"]
    print(f"{r['suite']}: {r['seeds']} seeds, {r['memories']} memories, {r['obligations']} obligations "
          f"(suite loaded in {r['load_s']:.2f} s)")
    print(f"  set-up                 {r['setup_wall']:7.2f} s wall  {r['setup_cpu']:7.2f} s CPU")
    print(f"  campaign               {r['wall']:7.2f} s wall  {r['cpu']:7.2f} s CPU   ({r['status']}, {ex} executions)")
    print(f"  executions/s           {ex / r['wall']:7.1f} (wall, set-up included)   {ex / r['cpu']:7.1f} (CPU)   "
          f"{ex / max(r['run_cpu'], 1e-9):7.1f} (CPU after set-up)")
    share = 1 - r["backend_s"] / r["wall"] if r["wall"] else 0.0
    cpu_share = 1 - r["backend_cpu"] / r["cpu"] if r["cpu"] else 0.0
    print(f"  engine overhead        {100 * share:6.1f} % of wall (backend calls {r['backend_s']:.2f} s of "
          f"{r['wall']:.2f} s);  {100 * cpu_share:.1f} % of CPU (backend {r['backend_cpu']:.2f} s of {r['cpu']:.2f} s)")
    top = sorted(((s, n) for n, s in r["by_call"].items() if s), reverse=True)[:6]
    print("  backend time by call   " + ", ".join(f"{n} {s:.2f} s/{r['calls'][n]}" for s, n in top))
    print(f"  corpus commits         {r['flush_s']:7.2f} s in {r['flushes']} windows; resume snapshots "
          f"{r['snapshot_s']:.2f} s in {r['snapshots']}")
    print(f"  unique failures        {r['unique_failures']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--retrieval", default="dense", choices=["dense", "bm25", "hybrid"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--suite", action="append", default=None,
                    help="shipped | synth:N | locomo:PATH (repeatable; default: shipped and synth:250)")
    ap.add_argument("--cold", action="store_true", help="start from an empty embedding cache")
    args = ap.parse_args()
    suites = args.suite or ["shipped", "synth:250"]
    with tempfile.TemporaryDirectory() as tmp:
        if args.cold:
            os.environ["UFUZZ_CACHE_DIR"] = str(Path(tmp) / "cache")
        if args.retrieval != "bm25":
            from ufuzz.backends.embedding import load_model

            t0 = time.perf_counter()
            load_model()  # loading the model is not the campaign's
            print(f"model load {time.perf_counter() - t0:.2f} s (not counted below)")
        print(f"embedded/{args.retrieval}, budget {args.budget}, seed {args.seed}, "
              f"{'cold' if args.cold else 'persistent'} embedding cache")
        for spec in suites:
            report(run_one(spec, args, Path(tmp)))
    rusage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"peak resident {rusage.ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
