"""Operator reach on a seed suite: on how many answerable seeds each operator makes a valid mutant.

    python benchmarks/bench_reach.py SEEDS.jsonl [--backend embedded] [--opt KEY=VALUE ...] [--tries 3]

For every seed whose reference is answerable (and, apart, every abstaining one) and every operator, each of the
operator's targets on the seed is tried (up to ``--tries`` draws where a draw can change the outcome): mutate and
validate exactly as a campaign does (:func:`ufuzz.engine.proposal.propose`; a state operator writes to a fork of
the seed's state), never retrieving or judging. It prints, per operator, the seeds with any target, the seeds with
a valid mutant and their share of the answerable seeds, and the most frequent rejection reasons: how much of a
real conversation each operator can test, whatever a campaign's budget reaches (issue 21's first criterion:
target_change, update, delete and unrelated_edit valid on at least 20% of the answerable seeds).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    from ufuzz.backends import registry
    from ufuzz.engine.executor import Executor
    from ufuzz.engine.proposal import propose
    from ufuzz.model import FuzzCase, Obligation
    from ufuzz.operators.registry import create_all
    from ufuzz.seeds.io import load_suite

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seeds")
    ap.add_argument("--backend", default="embedded")
    ap.add_argument("--opt", action="append", default=[], help="backend option KEY=VALUE")
    ap.add_argument("--tries", type=int, default=3)
    a = ap.parse_args()
    suite = load_suite(a.seeds)
    options = dict(o.split("=", 1) for o in a.opt)
    operators = create_all()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        backend = registry.load(a.backend)(Path(tmp), options)
        executor = Executor(backend, dict(suite.checkpoints))
        offered: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        valid: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        reasons: dict[str, Counter[str]] = {name: Counter() for name in operators}
        seeds = {True: 0, False: 0}
        counter = 0
        for seed in sorted(suite.seeds, key=lambda s: s.id):
            ref = suite.reference_of(seed)
            answerable = not ref.abstain
            seeds[answerable] += 1
            case = FuzzCase.from_seed(seed, suite.checkpoint_of(seed))
            for name, op in operators.items():
                targets = op.targets(case)
                if not targets:
                    continue
                offered[answerable][name] += 1
                ok = False
                for target in targets:
                    for _ in range(a.tries if op.varies(case, target) else 1):
                        counter += 1
                        p = propose(op, case, ref, target, Obligation(seed.id, name, target), counter, 1,
                                    executor=executor, fork=op.kind == "state")
                        if p.handle is not None:
                            executor.release(p.handle)
                        if p.valid:
                            ok = True
                            break
                        reasons[name][(p.reason or (p.error or ("", "?"))[1])[:70]] += 1
                    if ok:
                        break
                valid[answerable][name] += ok
        backend.close()
    n = seeds[True]
    print(f"{a.seeds}: {len(suite.seeds)} seeds, {n} answerable, {seeds[False]} abstaining; "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"{'operator':<16} {'offered':>8} {'valid':>6} {'of answerable':>14} {'abstaining: valid':>18}")
    for name in operators:
        share = valid[True][name] / n if n else 0.0
        print(f"{name:<16} {offered[True][name]:>8} {valid[True][name]:>6} {share:>13.0%} "
              f"{valid[False][name]:>18}")
    for name, c in reasons.items():
        if c:
            print(f"  {name} rejections: " + "; ".join(f"{r} ({k})" for r, k in c.most_common(3)))


if __name__ == "__main__":
    main()
