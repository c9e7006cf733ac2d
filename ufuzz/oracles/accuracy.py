"""The benchmark's own accuracy on a campaign's seeds, beside the fuzzing findings.

A researcher fuzzing Mem0 on LoCoMo wants to see the number the benchmark itself would give the system on
the same questions, to compare with published results: the share of seeds whose unmutated response the
benchmark's criterion (:mod:`ufuzz.seeds.criteria`) judges right. It is counted per benchmark and question
type from the seeds' response verdicts; a type the published score leaves out (LoCoMo's adversarial
questions) is shown but not counted in the benchmark's total. Only an LLM judge applies the criterion: with
text matching (no ``--llm-uses judge``) the figure is labelled as such, since it is not the benchmark's rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ufuzz.seeds.criteria import in_score


def _share(correct: int, judged: int) -> dict[str, Any]:
    return {"correct": correct, "judged": judged, "accuracy": round(correct / judged, 4) if judged else None}


def benchmark_accuracy(verdicts: Iterable[dict[str, Any]], *, llm_judge: bool,
                       seeds: dict[str, int] | None = None) -> dict[str, Any]:
    """``{benchmark: {"correct", "judged", "accuracy", "seeds", "judge", "by_type": {type: {...}}}}`` from
    seed verdicts ``{"benchmark", "question_type", "abstain", "correct"}``; ``seeds`` counts the seeds of
    each benchmark (judged or not). Abstention questions of a type are their own row (``type (abstention)``)."""
    rows: dict[str, dict[str, list[int]]] = {}
    totals: dict[str, list[int]] = {}
    for v in verdicts:
        bench, qtype = str(v["benchmark"]), v.get("question_type") or "?"
        key = f"{qtype} (abstention)" if v.get("abstain") and qtype != "adversarial" else qtype
        cell = rows.setdefault(bench, {}).setdefault(key, [0, 0])
        cell[0] += bool(v["correct"])
        cell[1] += 1
        if in_score(bench, qtype):
            total = totals.setdefault(bench, [0, 0])
            total[0] += bool(v["correct"])
            total[1] += 1
    out: dict[str, Any] = {}
    for bench in sorted(set(rows) | set(seeds or {})):
        c, n = totals.get(bench, [0, 0])
        out[bench] = {**_share(c, n), "seeds": (seeds or {}).get(bench, n),
                      "judge": "llm (benchmark criteria)" if llm_judge else "text matching (not the benchmark's rule)",
                      "by_type": {t: {**_share(*cell), "in_score": in_score(bench, t.removesuffix(" (abstention)"))}
                                  for t, cell in sorted(rows.get(bench, {}).items())}}
    return out
