"""A campaign's failures against a baseline regression corpus (``ufuzz run --baseline CORPUS``).

A failure is **known** when the corpus holds it as a failing record — the same unique-failure key, or the same
cause (another wording or target of one bug) — **regressed** when the corpus holds it as ``fixed`` (it was fixed
and fails again), and **new** otherwise. Only the memory system's mutant failures are compared: baseline failures
of seeds and the opt-in reader's are neither known nor new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ufuzz.corpus.regression import RegressionCorpus

__all__ = ["BaselineVerdict", "compare_with_baseline", "counts_as_system_failure", "baseline_mismatch",
           "baseline_source"]

#: the judging settings that change which failures exist (paths, timeouts and retries do not)
_JUDGING_KEYS = ("reader", "answer", "judge", "retrieval", "llm_model")


def counts_as_system_failure(f: Any) -> bool:
    """A mutant failure of the system under test (not a seed's baseline failure, not the reader's)."""
    responder = getattr(f, "responder", None) or ""
    return getattr(f, "origin", "mutant") == "mutant" and not responder.startswith("reader:")


@dataclass
class BaselineVerdict:
    corpus: str
    known: list[str] = field(default_factory=list)  # failure keys, in discovery order
    new: list[str] = field(default_factory=list)
    regressed: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)  # failing baseline records this campaign did not meet
    about: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> operator, kind, stage, cause
    mismatch: list[str] = field(default_factory=list)  # how this campaign differs from the baseline's

    def status_of(self, key: str) -> str | None:
        for name in ("known", "new", "regressed"):
            if key in getattr(self, name):
                return name
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.corpus, "known": len(self.known), "new": len(self.new),
                "regressed": len(self.regressed), "unseen": len(self.unseen), "known_keys": self.known,
                "new_keys": self.new, "regressed_keys": self.regressed,
                "new_failures": [{"key": k, **self.about.get(k, {})} for k in self.new],
                "regressed_failures": [{"key": k, **self.about.get(k, {})} for k in self.regressed],
                "mismatch": self.mismatch}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BaselineVerdict:
        about = {f["key"]: {k: v for k, v in f.items() if k != "key"}
                 for f in [*d.get("new_failures", []), *d.get("regressed_failures", [])] if isinstance(f, dict)}
        return cls(corpus=str(d.get("corpus", "")), known=list(d.get("known_keys", [])),
                   new=list(d.get("new_keys", [])), regressed=list(d.get("regressed_keys", [])),
                   about=about, mismatch=list(d.get("mismatch", [])))


def compare_with_baseline(failures: list[Any], corpus: RegressionCorpus) -> BaselineVerdict:
    """Mark every system failure (``FailureRecord``s, discovery order) known, new or regressed."""
    failing_keys = {r.failure_key for r in corpus.records if r.status == "failing"}
    failing_causes = {r.cause_key for r in corpus.records if r.status == "failing" and r.cause_key}
    fixed_keys = {r.failure_key for r in corpus.records if r.status == "fixed"}
    fixed_causes = {r.cause_key for r in corpus.records if r.status == "fixed" and r.cause_key}
    v = BaselineVerdict(corpus=str(corpus.path) if corpus.path else "")
    met: set[str] = set()
    met_causes: set[str] = set()
    for f in failures:
        if not counts_as_system_failure(f):
            continue
        cause = getattr(f, "cause_key", "") or ""
        v.about[f.failure_key] = {"operator": f.operator, "kind": f.kind, "stage": f.stage, "cause": cause}
        met.add(f.failure_key)
        if cause:
            met_causes.add(cause)
        if f.failure_key in failing_keys or (cause and cause in failing_causes):
            v.known.append(f.failure_key)
        elif f.failure_key in fixed_keys or (cause and cause in fixed_causes):
            v.regressed.append(f.failure_key)
        else:
            v.new.append(f.failure_key)
    v.unseen = [r.failure_key for r in corpus.records if r.status == "failing" and r.failure_key not in met
                and not (r.cause_key and r.cause_key in met_causes)]
    return v


def baseline_source(corpus: RegressionCorpus) -> dict[str, Any]:
    """How the baseline's campaign ran, from its header (``source``: seed, budget, strategy; ``k``; backend)."""
    src = dict(corpus.header.get("source") or {})
    return {"seed": src.get("seed"), "budget": src.get("budget"), "strategy": src.get("strategy"),
            "k": corpus.header.get("k"), "backend": corpus.header.get("backend"),
            "judging": dict(corpus.header.get("judging") or {})}


def baseline_mismatch(corpus: RegressionCorpus, *, seed: int, budget: int, strategy: str, k: int, backend: str,
                      judging: dict[str, Any]) -> list[str]:
    """What differs between the campaign about to run and the one the baseline was exported from. A known bug
    met on another seed or budget shows under other keys, so each difference can make known failures look new
    (or leave them unmet): said before the campaign starts, and kept in summary.json."""
    src = baseline_source(corpus)
    out = []
    for name, now in (("backend", backend), ("seed", seed), ("budget", budget), ("strategy", strategy), ("k", k)):
        was = src[name]
        if was is not None and was != now:
            out.append(f"{name} {now} (the baseline's campaign: {was})")
    was_j = src["judging"]
    for name in _JUDGING_KEYS:
        if was_j and was_j.get(name) != judging.get(name):
            out.append(f"judging {name} {judging.get(name)!r} (the baseline's: {was_j.get(name)!r})")
    return out
