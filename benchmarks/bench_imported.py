"""Campaigns on imported benchmark files: import and set-up time, and what the budget went to.

    python benchmarks/bench_imported.py locomo FILE [--budget 1000] [--seed 0] [--strategy full] [--k 5]
    python benchmarks/bench_imported.py longmemeval FILE --s-sized 50   # pad every haystack to 50 sessions
    python benchmarks/bench_imported.py locomo FILE --setup-only --replicate 7   # a ~2,000-seed suite

Prints, for one campaign on the embedded backend (dense MiniLM, offline): import and set-up time (wall and
CPU), the share of attempted mutants that were valid, the share of executions spent on parents, the share
of executed mutants whose parent passed its selection level (so a failure could be caused by the mutation),
unique failures by operator and kind, and run time. The figures come from the campaign's own counters and
corpus; timing on a shared machine is only indicative (CPU seconds are printed beside wall seconds).

``--s-sized N`` turns a LongMemEval oracle-split file (answer sessions only) into an S-sized one: each
question's haystack is padded to N sessions with other questions' sessions (dated before the question, the
``has_answer`` marks removed), which is the scale of LongMemEval-S (~50 sessions a question).
``--replicate R`` repeats a LoCoMo file's conversations R times (new sample ids) to reach a large suite.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def s_sized(records: list[dict], sessions: int, seed: int = 0) -> list[dict]:
    """LongMemEval-S-like records: each haystack padded with other records' sessions up to ``sessions``."""
    rng = random.Random(seed)
    pool = [(r["question_id"], sid, date, [{k: v for k, v in t.items() if k != "has_answer"} for t in sess])
            for r in records
            for sid, date, sess in zip(r["haystack_session_ids"], r["haystack_dates"], r["haystack_sessions"],
                                       strict=False)]
    out = []
    for r in records:
        r = copy.deepcopy(r)
        others = [p for p in pool if p[0] != r["question_id"]]
        rng.shuffle(others)
        for qid, sid, date, sess in others[:max(0, sessions - len(r["haystack_sessions"]))]:
            r["haystack_session_ids"].append(f"pad-{qid}-{sid}")
            r["haystack_dates"].append(date)
            r["haystack_sessions"].append(sess)
        order = sorted(range(len(r["haystack_dates"])), key=lambda i: r["haystack_dates"][i])
        for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
            r[key] = [r[key][i] for i in order]
        out.append(r)
    return out


def replicate(records: list[dict], times: int) -> list[dict]:
    out = []
    for i in range(times):
        for r in records:
            r = copy.deepcopy(r)
            r["sample_id"] = f"{r['sample_id']}-r{i}"
            out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("fmt")
    ap.add_argument("file")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategy", default="full")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--s-sized", type=int, default=0, help="pad LongMemEval haystacks to this many sessions")
    ap.add_argument("--replicate", type=int, default=1, help="repeat LoCoMo conversations (large suites)")
    ap.add_argument("--setup-only", action="store_true", help="stop after the campaign's set-up")
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                    help="embedded backend option, e.g. relevance_threshold=0.4")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()

    from ufuzz.engine import campaign as cmod
    from ufuzz.engine.strategies import apply_strategy
    from ufuzz.seeds.importers import import_file

    tmp = Path(tempfile.mkdtemp(prefix="bench-imported-"))
    path = Path(args.file)
    if args.s_sized or args.replicate > 1:
        records = json.loads(path.read_text())
        records = s_sized(records, args.s_sized) if args.s_sized else replicate(records, args.replicate)
        path = tmp / f"{path.stem}-bench.json"
        path.write_text(json.dumps(records))
    w0, c0 = time.perf_counter(), cpu()
    res = import_file(args.fmt, path)
    w_imp, c_imp = time.perf_counter() - w0, cpu() - c0
    suite = res.suite
    memories = sum(len(cp.memories) for cp in suite.checkpoints.values())
    print(f"import: {len(suite.seeds)} seeds, {len(suite.checkpoints)} checkpoints, {memories} memories in "
          f"{w_imp:.1f} s wall / {c_imp:.1f} s CPU")

    stats: Counter[str] = Counter()
    marks: dict[str, float] = {}

    class Measured(cmod.Campaign):
        def _record_exec(self, ex, is_parent, checkpoint_id):
            stats["parent" if is_parent else "mutant"] += 1
            super()._record_exec(ex, is_parent, checkpoint_id)

        def _execute(self, task, proposal, parent, parent_ex, hidden):
            stats["judgeable" if self.oracle.testable(parent, parent_ex) else "unjudgeable"] += 1
            return super()._execute(task, proposal, parent, parent_ex, hidden)

        def _loop(self, on_progress):
            def first(progress):  # the set-up ends at the first step
                marks.setdefault("setup", time.perf_counter())
                if args.setup_only:
                    self._stop.set()
                if on_progress:
                    on_progress(progress)
            return super()._loop(first)

    cfg = cmod.CampaignConfig(budget=args.budget, seed=args.seed, out=str(tmp / "campaign"), k=args.k,
                              backend_options=dict(o.split("=", 1) for o in args.opt))
    apply_strategy(cfg, args.strategy)
    c = Measured(cfg, suite=suite)
    w1, c1 = time.perf_counter(), cpu()
    summary = c.run()
    w_run, c_run = time.perf_counter() - w1, cpu() - c1
    setup = marks.get("setup", time.perf_counter()) - w1
    print(f"set-up (backend load, seeds, obligations; to the first step): {setup:.1f} s wall, "
          f"{summary['obligations']} obligations")
    if args.setup_only:
        return
    p = c.progress
    attempted = p.mutants_valid + p.mutants_rejected
    execs = stats["parent"] + stats["mutant"]
    judged = stats["judgeable"] + stats["unjudgeable"]
    print(f"run ({args.strategy}, budget {args.budget}, seed {args.seed}): {w_run:.1f} s wall / {c_run:.1f} s CPU; "
          f"import + run {w_imp + w_run:.1f} s wall / {c_imp + c_run:.1f} s CPU")
    print(f"  mutants valid {p.mutants_valid}/{attempted} = {100 * p.mutants_valid / max(attempted, 1):.1f}%"
          f" (valid but not run, nothing could fail: {getattr(p, 'mutants_unjudged', 0)})")
    print(f"  executions on parents {stats['parent']}/{execs} = {100 * stats['parent'] / max(execs, 1):.1f}%")
    print(f"  executed mutants judgeable {stats['judgeable']}/{judged} = "
          f"{100 * stats['judgeable'] / max(judged, 1):.1f}%")
    print(f"  unique failures {summary['unique_failures']} ({summary.get('causes')} causes; "
          f"{summary.get('baseline_failures')} seeds fail their own reference)  by operator "
          f"{summary['failures_by_operator']}  by kind {summary['failures_by_kind']}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "seeds": len(suite.seeds), "strategy": args.strategy, "seed": args.seed, "options": args.opt,
            "import_wall": w_imp, "import_cpu": c_imp, "setup_wall": setup, "run_wall": w_run, "run_cpu": c_run,
            "valid_pct": 100 * p.mutants_valid / max(attempted, 1), "unjudged": getattr(p, "mutants_unjudged", 0),
            "parent_pct": 100 * stats["parent"] / max(execs, 1),
            "judgeable_pct": 100 * stats["judgeable"] / max(judged, 1), "summary": {
                k: summary.get(k) for k in ("unique_failures", "causes", "baseline_failures", "failures_by_operator",
                                            "failures_by_kind", "executions", "obligations", "coverage")},
            "campaign_dir": str(tmp / "campaign")}, indent=1))


if __name__ == "__main__":
    main()
