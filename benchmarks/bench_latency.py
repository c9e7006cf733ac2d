"""Latency-bound campaigns: executions/s at ``--max-concurrency`` 1, 4, 16, 64 against a remote LLM and a product
over HTTP, both local stand-ins that wait as remote ones do.

    python benchmarks/bench_latency.py [--targets llm,http] [--concurrency 1,4,16,64]
                                       [--llm-latency 0.3] [--llm-uses answer,judge] [--llm-budget 1000]
                                       [--serial-budget 100] [--http-delay 0.02] [--http-budget 300] [--seed 1]
                                       [--batch N]

Targets, each a whole campaign on the shipped suite, run as its own ``python -m ufuzz run`` process (so that
its CPU time and peak RSS are its own, not the servers'):

* ``llm`` — the embedded backend (its default dense retrieval) with ``--llm-uses`` (default answer and judge)
  at a local OpenAI-compatible server (tests/support/llm_server.py: the rule-based stand-in model) that answers
  every request after ``--llm-latency`` seconds, many at once, as a hosted endpoint does;
* ``http`` — the HTTP backend (examples/product.toml) against the tests' memory product on loopback, every
  request answered after ``--http-delay`` seconds.

Every run has the same ``--batch`` (default: ufuzz's default with lanes, 128 — not given, one lane would run step
by step, another campaign), so every concurrency runs the same campaign: the ``found`` column (a
fingerprint of the failures and where each was first seen) is the same for runs of one target and budget, and
the last line says whether it was. Concurrency 1 runs one call at a time; at 300 ms a request it waits ~10 minutes per 1,000 executions, so
it runs ``--serial-budget`` executions (its rate is what matters). Per run it prints wall seconds, the campaign
process's CPU seconds and peak RSS, the LLM (or HTTP) requests the server answered, the *ideal* wall time
(requests × latency ÷ concurrency: the waiting alone, perfectly overlapped) and wall ÷ (ideal + CPU), the
figure the issue's targets are stated in; overall executions/s and executions/s after set-up (from plot_data.csv:
process start, imports, model load and seeding excluded); then the speed-up of the latter over concurrency 1.
Every run gets a fresh LLM call cache. On a shared machine the figures move with the load: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ufuzz.engine.parallel.batching import DEFAULT_BATCH  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"


def run_campaign(args: list[str], out: Path, env: dict[str, str]) -> dict[str, Any]:
    """One ``ufuzz run`` in a child process: its wall, CPU and peak RSS (from wait4) and its summary."""
    import json

    cmd = [sys.executable, "-m", "ufuzz", "run", "--out", str(out), "--force", "--quiet", *args, *BATCH]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out_text = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        raise SystemExit(f"campaign failed (exit {proc.returncode}):\n{out_text}") from None
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "summary": summary, "exit": proc.returncode, "run_rate": _run_rate(out / "plot_data.csv"),
            "found": _found(out)}


def _found(out: Path) -> str:
    """A fingerprint of the campaign's failures (every recorded failure key, with the execution that first
    showed it): equal fingerprints at two concurrencies are the same findings, found at the same points."""
    import hashlib
    import sqlite3

    with sqlite3.connect(out / "corpus.sqlite") as db:
        rows = sorted(db.execute("SELECT failure_key, first_seq FROM failures").fetchall())
    return hashlib.sha1(repr(rows).encode()).hexdigest()[:10]


def _run_rate(plot: Path) -> float:
    """Executions/s after set-up (process start, imports, model load, preflight, seeding: until the first
    executions are applied), from the campaign's plot_data.csv."""
    import csv

    rows = [(float(r["elapsed_s"]), int(r["executions"])) for r in csv.DictReader(plot.open())]
    rows = [r for r in rows if r[1] > 0]
    if len(rows) < 2 or rows[-1][0] <= rows[0][0]:
        return float("nan")
    return (rows[-1][1] - rows[0][1]) / (rows[-1][0] - rows[0][0])


def bench_llm(a: argparse.Namespace, ns: list[int], tmp: Path, env: dict[str, str]) -> None:
    from tests.support.llm_server import RuleBasedResponder, Slow, start_llm_server

    print(f"\nllm: embedded backend, --llm-uses {a.llm_uses}, {a.llm_latency * 1000:.0f} ms per request")
    slow = Slow(RuleBasedResponder(), a.llm_latency)
    rates: dict[int, float] = {}
    with start_llm_server(slow) as srv:
        for n in ns:
            budget = a.serial_budget if n == 1 else a.llm_budget
            cache = tmp / f"cache-llm-{n}"
            before = srv.count
            r = run_campaign(["--backend", "embedded", "--budget", str(budget), "--seed", str(a.seed),
                              "--llm-base-url", srv.base_url, "--llm-model", "rule-model", "--llm-uses", a.llm_uses,
                              "--max-concurrency", str(n)], tmp / f"llm-{n}",
                             {**env, "UFUZZ_CACHE_DIR": str(cache)})
            requests = srv.count - before
            rates[n] = _row("llm", n, r, requests, a.llm_latency, slow.peak)
            slow.peak = 0
    _speedups(rates)


def bench_http(a: argparse.Namespace, ns: list[int], tmp: Path, env: dict[str, str]) -> None:
    print(f"\nhttp: examples/product.toml against the test product, {a.http_delay * 1000:.0f} ms per request")
    rates: dict[int, float] = {}
    # The product is this process's threads: at Python's 5 ms switch interval a handler whose 20 ms are up waits
    # for the GIL behind the others, and the product answers later than the latency it stands for (at 16 calls
    # in flight the campaign ran ~10% slower for it). A real product is not this process's interpreter.
    swi = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        _bench_http_on(a, ns, tmp, env, rates)
    finally:
        sys.setswitchinterval(swi)
    _speedups(rates)


def _bench_http_on(a: argparse.Namespace, ns: list[int], tmp: Path, env: dict[str, str],
                   rates: dict[int, float]) -> None:
    from tests.support.http_product_server import start_product_server

    with start_product_server(TOKEN) as srv:
        srv.delay = a.http_delay
        for n in ns:
            before = len(srv.requests)
            r = run_campaign(["--backend", "http", "--config", str(ROOT / "examples" / "product.toml"),
                              "--opt", f"base_url={srv.base_url}", "--budget", str(a.http_budget),
                              "--seed", str(a.seed), "--max-concurrency", str(n)], tmp / f"http-{n}",
                             {**env, "PRODUCT_API_TOKEN": TOKEN})
            rates[n] = _row("http", n, r, len(srv.requests) - before, a.http_delay, None)


HEAD = (f"{'target':<6} {'N':>3} {'status':<13} {'execs':>6} {'wall s':>8} {'cpu s':>7} {'rss MB':>7} "
        f"{'requests':>8} {'ideal s':>8} {'wall/(ideal+cpu)':>16} {'execs/s':>8} {'run execs/s':>11} {'peak':>5} "
        f"{'failures':>8} {'errors':>6} {'found':>10}")


def _row(target: str, n: int, r: dict[str, Any], requests: int, latency: float, peak: int | None) -> float:
    s = r["summary"]
    ideal = requests * latency / n
    ratio = r["wall"] / (ideal + r["cpu"]) if ideal + r["cpu"] > 0 else float("nan")
    rate = s["executions"] / r["wall"]
    print(f"{target:<6} {n:>3} {s['status']:<13} {s['executions']:>6} {r['wall']:>8.1f} {r['cpu']:>7.1f} "
          f"{r['rss_mb']:>7.0f} {requests:>8} {ideal:>8.1f} {ratio:>16.2f} {rate:>8.2f} {r['run_rate']:>11.2f} "
          f"{'' if peak is None else peak:>5} {s['unique_failures']:>8} {s['errors']:>6} {r['found']:>10}", flush=True)
    FOUND.setdefault((target, s["executions"]), set()).add(r["found"])
    return r["run_rate"]


#: the --batch given to every run: one for all, so that concurrency 1 runs the campaign the others run
BATCH: list[str] = ["--batch", str(DEFAULT_BATCH)]

#: the failure fingerprints by (target, executions): one per pair when concurrency changes no finding
FOUND: dict[tuple[str, int], set[str]] = {}


def _speedups(rates: dict[int, float]) -> None:
    base = rates.get(1)
    if base:
        print("  executions/s after set-up, over concurrency 1: "
              + ", ".join(f"{n}: {rate / base:.1f}x" for n, rate in rates.items() if n != 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="llm,http")
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--llm-latency", type=float, default=0.3)
    ap.add_argument("--llm-uses", default="answer,judge")
    ap.add_argument("--llm-budget", type=int, default=1000)
    ap.add_argument("--serial-budget", type=int, default=100)
    ap.add_argument("--http-delay", type=float, default=0.02)
    ap.add_argument("--http-budget", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="--batch of every run")
    a = ap.parse_args()
    BATCH[:] = ["--batch", str(a.batch)]
    ns = [int(x) for x in a.concurrency.split(",")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(HEAD)
    with tempfile.TemporaryDirectory() as tmp:
        for target in a.targets.split(","):
            if target == "llm":
                bench_llm(a, ns, Path(tmp), env)
            elif target == "http":
                bench_http(a, ns, Path(tmp), env)
            else:
                raise SystemExit(f"unknown target {target!r}: llm or http")
    for (target, execs), prints in sorted(FOUND.items()):
        print(f"{target}, {execs} executions: "
              + ("the same failures at every concurrency" if len(prints) == 1 else
                 f"{len(prints)} different sets of failures ({', '.join(sorted(prints))})"))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
