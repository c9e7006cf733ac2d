"""A campaign's failures against a baseline regression corpus (``ufuzz run --baseline CORPUS``).

**"New" means a new behaviour, not a new key.** A unique-failure key and a cause name the fact, the memory ids
and (for a cause) the question's fields, so one defect met on another fact, wording or seed — what any other
seed or budget does — shows under keys the baseline never held. Failures are therefore matched by their
*behaviour* (:func:`ufuzz.oracles.classes.behaviour_of`): the behaviour class (the operator's way of breaking the
system at one level: "a deleted memory is still retrieved", "evidence leaves the top-k under rewording") and
whether the memory at fault is one the state no longer holds (a deleted memory, an overwritten version) — no
ids, facts, people, wordings or seeds.

Each behaviour met tonight gets one status; ``c0`` is the number of causes the baseline's failing records
show of it, ``c1`` the number tonight:

1. **regressed** — one of its failures has the key or cause of a *guard* (a record ``ufuzz corpus accept``
   marked ``fixed``: the failure that was fixed fails again), or the corpus holds the behaviour only as guards;
2. **new** — the baseline does not show it (``c0 = 0``), and either it was met often enough that the baseline's
   campaign could not plausibly have missed it by chance (below), or tonight's campaign is the baseline's own
   (same seed, budget, strategy, k, backend and judging: the two differ only by the product) and the behaviour is
   one no correct system shows however it is reached — a memory the state no longer holds returned, a state
   change beyond the one asked for. A ranking behaviour met a few times is not enough there: the campaigns'
   schedules part at their first differing result, so a product change (a new delete bug) moves tonight's
   campaign onto facts the baseline's never reached, where ranking weaknesses the product always had show (a
   test product: a new soft-delete bug, and one rewording's near tie "new" beside it);
3. **unconfirmed** — the baseline does not show it, it is not new by (2), and it was met so seldom that the
   baseline's campaign may simply not have reached it (a rare behaviour of an unchanged product, or one tonight's
   schedule reached after parting from the baseline's): listed, but it does not fail the night;
4. **worse** — the baseline shows it, but tonight met it far more often than chance allows (a new defect
   behind a known symptom: an index that now drops memories where ranking noise lost a few before);
5. **known** — otherwise.

*Chance* (statuses 2-4): if the behaviour had the same rate per execution in both campaigns (``B0``
executions in the baseline's, its budget; ``B1`` tonight), each of the ``c0 + c1`` causes fell into tonight's
campaign with probability ``B1 / (B0 + B1)``; the chance of tonight meeting at least ``c1`` of them is the
binomial tail (the conditional test of two Poisson rates). Below :data:`CHANCE` (1 %) the difference is the
product's, not the sample's. For a behaviour the baseline lacks that tail is ``(B1 / (B0 + B1)) ** c1``: at equal
budgets 7 causes confirm it. A corpus exported with ``--max`` holds a selection of the campaign's failures, so
``c0`` undercounts and no behaviour is judged worse.

The night fails (``--fail-on new``) for a new, worse or regressed behaviour. Each failure's own mark is its
behaviour's status (a failure on a guard's key or cause is marked regressed). Baseline failures of seeds (a
question failing as asked) and the opt-in reader's are neither known nor new. A baseline behaviour this
campaign did not meet is *unseen* (``ufuzz corpus check`` replays its records).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from math import comb
from typing import Any

from ufuzz.model import StateOp
from ufuzz.oracles.classes import Behaviour, behaviour_of
from ufuzz.triage.corpusfile import RegressionCorpus, RegressionRecord

__all__ = ["BaselineVerdict", "compare_with_baseline", "counts_as_system_failure", "baseline_mismatch",
           "baseline_source", "record_behaviour", "chance_of", "STATUSES", "FAILING", "CHANCE"]

#: the judging settings that change which failures exist (paths, timeouts and retries do not)
_JUDGING_KEYS = ("reader", "answer", "judge", "retrieval", "llm_model")
#: a behaviour's status against the baseline, worst first (the first three fail the night)
STATUSES = ("regressed", "new", "worse", "unconfirmed", "known")
FAILING = ("regressed", "new", "worse")
#: below this chance a difference in how often a behaviour was met is the product's, not the sample's
CHANCE = 0.01


def counts_as_system_failure(f: Any) -> bool:
    """A mutant failure of the system under test (not a seed's baseline failure, not the reader's)."""
    responder = getattr(f, "responder", None) or ""
    return getattr(f, "origin", "mutant") == "mutant" and not responder.startswith("reader:")


def record_behaviour(r: RegressionRecord) -> Behaviour:
    """The behaviour of a corpus record (its mutant's recipe says which memories it removed)."""
    return behaviour_of(r.operator, r.stage, r.kind, r.offending, r.mutant.ops)


def chance_of(c0: int, c1: int, b0: float, b1: float) -> float:
    """The chance that tonight meets at least ``c1`` of the ``c0 + c1`` causes of a behaviour if its rate per
    execution were the same as in the baseline's campaign (``b0`` executions there, ``b1`` tonight)."""
    n = c0 + c1
    if c1 <= 0 or n <= 0:
        return 1.0
    p = b1 / (b0 + b1) if b0 + b1 > 0 else 0.5
    return min(1.0, sum(comb(n, x) * p ** x * (1 - p) ** (n - x) for x in range(c1, n + 1)))


@dataclass
class BaselineVerdict:
    corpus: str
    known: list[str] = field(default_factory=list)  # failure keys by their mark, in discovery order
    new: list[str] = field(default_factory=list)
    regressed: list[str] = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)  # failing baseline behaviours (ids) this campaign did not meet
    about: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> operator, kind, stage, cause, behaviour
    mismatch: list[str] = field(default_factory=list)  # how this campaign differs from the baseline's
    #: behaviour id -> id, title, class, status, unique, causes, baseline_causes, chance, operators, kinds,
    #: example, keys (first met first)
    behaviours: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the baseline's own behaviours: id -> title, class, records (failing), guards (fixed), causes, keys
    baseline_behaviours: dict[str, dict[str, Any]] = field(default_factory=dict)
    exact: bool = False  # tonight's campaign is the baseline's own (its settings; schedules part where results do)
    executions: tuple[int | None, int | None] = (None, None)  # the baseline's campaign (its budget), tonight's

    def status_of(self, key: str) -> str | None:
        for name in STATUSES:
            if key in getattr(self, name):
                return name
        return None

    def behaviours_by(self, status: str) -> list[dict[str, Any]]:
        return [b for b in self.behaviours.values() if b["status"] == status]

    def behaviour_counts(self) -> dict[str, int]:
        return {**{s: len(self.behaviours_by(s)) for s in STATUSES}, "unseen": len(self.unseen)}

    @property
    def failed(self) -> bool:
        """Something the night must fail for: a new, worse or regressed behaviour."""
        return any(b["status"] in FAILING for b in self.behaviours.values())

    def to_dict(self) -> dict[str, Any]:
        return {"corpus": self.corpus, "matching": "behaviour", "exact": self.exact,
                "executions": {"baseline": self.executions[0], "tonight": self.executions[1]},
                **{s: len(getattr(self, s)) for s in STATUSES}, "unseen": len(self.unseen),
                "failed": self.failed, "behaviour_counts": self.behaviour_counts(),
                **{f"{s}_keys": getattr(self, s) for s in STATUSES},
                "behaviours": list(self.behaviours.values()),
                **{f"{s}_failures": [{"key": k, **self.about.get(k, {})} for k in getattr(self, s)]
                   for s in FAILING},
                "unseen_behaviours": [{"id": b, **self.baseline_behaviours.get(b, {})} for b in self.unseen],
                "mismatch": self.mismatch}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BaselineVerdict:
        about = {f["key"]: {k: v for k, v in f.items() if k != "key"}
                 for s in FAILING for f in d.get(f"{s}_failures", []) if isinstance(f, dict) and "key" in f}
        behaviours = {b["id"]: b for b in d.get("behaviours", []) if isinstance(b, dict) and "id" in b}
        unseen = [u for u in d.get("unseen_behaviours", []) if isinstance(u, dict) and "id" in u]
        ex = d.get("executions") if isinstance(d.get("executions"), dict) else {}
        return cls(corpus=str(d.get("corpus", "")), **{s: list(d.get(f"{s}_keys", [])) for s in STATUSES},
                   unseen=[u["id"] for u in unseen], about=about, mismatch=list(d.get("mismatch", [])),
                   behaviours=behaviours, baseline_behaviours={u["id"]: {k: v for k, v in u.items() if k != "id"}
                                                               for u in unseen},
                   exact=bool(d.get("exact", False)), executions=(ex.get("baseline"), ex.get("tonight")))


def _baseline_behaviours(corpus: RegressionCorpus) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    causes: dict[str, set[str]] = {}
    for r in corpus.records:
        b = record_behaviour(r)
        row = out.setdefault(b.id, {"title": b.title, "class": b.cls.id, "records": 0, "guards": 0, "causes": 0,
                                    "keys": []})
        if r.status == "fixed":
            row["guards"] += 1
            continue
        row["records"] += 1
        row["keys"].append(r.failure_key)
        seen = causes.setdefault(b.id, set())
        if (r.cause_key or r.failure_key) not in seen:
            seen.add(r.cause_key or r.failure_key)
            row["causes"] += 1
    return out


def _complete(corpus: RegressionCorpus) -> bool:
    """Whether the corpus holds every failure its campaign exported (not a ``--max`` selection)."""
    sel = corpus.header.get("selection") or {}
    return not (isinstance(sel, dict) and sel.get("max") is not None
                and int(sel.get("exportable") or 0) > len(corpus.records))


def _status(row: dict[str, Any], base: dict[str, Any] | None, b0: float, b1: float, exact: bool,
            complete: bool) -> str:
    """Statuses 1-5 of the module docstring for one behaviour met tonight (before guard keys)."""
    c0 = int(base["causes"]) if base else 0
    if base is not None and not c0:
        return "regressed"  # only guards of it: a fixed behaviour is back
    row["chance"] = chance_of(c0, row["causes"], b0, b1)
    if not c0:
        return "new" if (exact and row.get("sure")) or row["chance"] < CHANCE else "unconfirmed"
    return "worse" if complete and row["chance"] < CHANCE else "known"


def compare_with_baseline(failures: list[Any], corpus: RegressionCorpus,
                          ops: Mapping[str, Iterable[StateOp]] | None = None, *, executions: int | None = None,
                          exact: bool = False) -> BaselineVerdict:
    """Give every behaviour of the campaign's system failures (``FailureRecord``s, discovery order) a status
    against the baseline, and every failure its behaviour's (the module docstring). ``ops``: each failing case's
    state recipe by case id (which memories it deleted; without it only overwritten versions count as memories
    the state no longer holds); ``executions``: tonight's (default: the baseline's budget); ``exact``: tonight's
    campaign is the baseline's own."""
    guards = [r for r in corpus.records if r.status == "fixed"]
    guard_keys = {r.failure_key for r in guards}
    guard_causes = {r.cause_key for r in guards if r.cause_key}
    base = _baseline_behaviours(corpus)
    budget = (corpus.header.get("source") or {}).get("budget")
    b0 = float(budget) if isinstance(budget, int) and budget > 0 else None
    b1 = float(executions) if executions else None
    v = BaselineVerdict(corpus=str(corpus.path) if corpus.path else "", baseline_behaviours=base, exact=exact,
                        executions=(int(b0) if b0 else None, int(b1) if b1 else None))
    seen_causes: dict[str, set[str]] = {}
    marks: dict[str, tuple[str, bool]] = {}  # key -> (behaviour id, on a guard's key or cause)
    for f in failures:
        if not counts_as_system_failure(f):
            continue
        cause = getattr(f, "cause_key", "") or ""
        offending = tuple(str(i) for i in (f.detail.get("offending") or ()))
        b = behaviour_of(f.operator, f.stage, f.kind, offending, (ops or {}).get(f.case_id, ()))
        v.about[f.failure_key] = {"operator": f.operator, "kind": f.kind, "stage": f.stage, "cause": cause,
                                  "behaviour": b.id}
        marks[f.failure_key] = (b.id, f.failure_key in guard_keys or bool(cause and cause in guard_causes))
        row = v.behaviours.setdefault(b.id, {
            "id": b.id, "title": b.title, "class": b.cls.id, "status": "", "unique": 0, "causes": 0,
            "baseline_causes": int(base[b.id]["causes"]) if b.id in base else 0, "chance": None,
            "operators": [], "kinds": [], "example": f.failure_key, "keys": [],
            # no correct system shows it, however it was reached: a memory the state no longer holds returned, a
            # state change beyond the one asked for (a ranking behaviour may be reached only because the product's
            # change moved tonight's schedule off the baseline's)
            "sure": b.removed or f.stage == "state" or f.kind == "deleted_evidence_retrieved"})
        row["unique"] += 1
        row["keys"].append(f.failure_key)
        causes = seen_causes.setdefault(b.id, set())
        if (cause or f.failure_key) not in causes:
            causes.add(cause or f.failure_key)
            row["causes"] += 1
        for name, value in (("operators", f.operator or "-"), ("kinds", f"{f.stage}:{f.kind}")):
            if value not in row[name]:
                row[name].append(value)
    complete = _complete(corpus)
    for bid, row in v.behaviours.items():
        row["status"] = _status(row, base.get(bid), b0 or b1 or 1.0, b1 or b0 or 1.0, exact, complete)
    for key, (bid, on_guard) in marks.items():  # marked before a guard's failure makes its behaviour regressed
        getattr(v, "regressed" if on_guard else v.behaviours[bid]["status"]).append(key)
    for bid, on_guard in marks.values():
        if on_guard:
            v.behaviours[bid]["status"] = "regressed"  # a behaviour is as bad as its worst failure
    v.unseen = [b for b, row in base.items() if row["records"] and b not in v.behaviours]
    return v


def baseline_source(corpus: RegressionCorpus) -> dict[str, Any]:
    """How the baseline's campaign ran, from its header (``source``: seed, budget, strategy, batch; ``k``;
    backend). A baseline exported before batches were recorded has none (its campaign's is not known)."""
    src = dict(corpus.header.get("source") or {})
    return {"seed": src.get("seed"), "budget": src.get("budget"), "strategy": src.get("strategy"),
            "batch": src.get("batch"),
            # whether its writes were read back (ufuzz.engine.readback); a baseline exported before did not
            "readback": bool(src.get("readback", False)) if src else None,
            "k": corpus.header.get("k"), "backend": corpus.header.get("backend"),
            "judging": dict(corpus.header.get("judging") or {})}


def baseline_mismatch(corpus: RegressionCorpus, *, seed: int, budget: int, strategy: str, k: int, backend: str,
                      judging: dict[str, Any], batch: int | None = None, readback: bool | None = None) -> list[str]:
    """What differs between the campaign about to run and the one the baseline was exported from. Failures are
    matched by behaviour, so a known bug met on other facts stays known whatever the seed or budget; but another
    campaign can reach behaviours the baseline's never did (new, or unconfirmed when rare), and other judging or another
    backend decides failures differently: said before the campaign starts, and kept in summary.json."""
    src = baseline_source(corpus)
    out = []
    for name, now in (("backend", backend), ("seed", seed), ("budget", budget), ("strategy", strategy), ("k", k),
                      ("batch", batch), ("readback", readback)):
        was = src[name]
        if was is not None and now is not None and was != now:
            out.append(f"{name} {now} (the baseline's campaign: {was})")
    was_j = src["judging"]
    for name in _JUDGING_KEYS:
        if was_j and was_j.get(name) != judging.get(name):
            out.append(f"judging {name} {judging.get(name)!r} (the baseline's: {was_j.get(name)!r})")
    return out
