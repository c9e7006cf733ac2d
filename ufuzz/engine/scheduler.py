"""The scheduler: uncovered obligations first, then retained mutants compete for the remaining budget.

It sees only ids, operator names, obligation targets and what the feedback signals made of each execution
(energy, effect, instability: :class:`StepOutcome`; never a signal by name) — never queries' references, oracle
verdicts or failures. By construction it cannot: this module imports nothing from ``ufuzz.oracles``
or ``ufuzz.corpus`` and none of its methods takes a failure or a reference (``tests/engine/test_separation.py``
checks both).

Phase 1 walks the seeds' obligations (seed × operator × target) seed by seed, in a seeded shuffled order of
the seeds and, within a seed, a shuffled round-robin over its operators: a seed's obligations run together,
so its parent execution (cached per state and query) serves all of them — on a large suite, where the
budget reaches only some of the seeds, parent executions stay a small share of it. Each obligation gets up
to ``attempts`` tries until one produces a valid, executed mutant; a try whose rejection cannot change with
another draw (``StepOutcome.final``: the operator's move does not depend on the rng) ends it at once. Before
phase 1 leaves a seed it spends up to ``burst`` × (the seed's obligations) follow-up tasks on the seed's
retained mutants (phase-2 picks among them, whose parent executions are cached) — while the seeds started
are more than ``parent_share`` of the seeds started plus the mutants executed (by default not in a spread whose
budget is under two executions a seed: see ``SchedulerConfig.burst``).
:meth:`Scheduler.retire` ends every remaining task of a case (the campaign retires a parent none of whose
mutants could be judged); the scheduler is told only the id, never why.
Phase 2 picks a pool entry (retained mutants, and the seeds themselves) with probability proportional to
its energy — 1 plus what the feedback signals added (:func:`ufuzz.engine.signals.combine`) — divided by (1 +
times picked), then an (operator, target) available on it, drawn in proportion to the
operator's effect rate (how often its mutants reached new memories or ranked them otherwise than the mutation
predicts; see :meth:`Scheduler.effect_rate`) — an edit that never changes what the system does is drawn less.

**Spread** (``SchedulerConfig.spread``, for suites larger than the budget can walk): phase 1 visits the seeds
in a greedy cover order of the checkpoint memories they are expected to reach (:mod:`ufuzz.engine.cover`; the
expected reach is a set of memory ids from the checkpoint's provenance, given with :meth:`Scheduler.add_seed`),
round after round, giving each visit up to ``visit`` tasks. A visit's operator is drawn in proportion to the
square of the operator's *yield* (:meth:`Scheduler.yield_rate`: how often its tasks changed what the system retrieved
beyond what the mutation itself changes — new memories reached, a ranking other than the mutation predicts
(:attr:`StepOutcome.effect`) — counting tries whose mutant could not be made or judged here as tries without
effect), and a seed whose best remaining operator yields less than the best operator
still open elsewhere is visited only with the ratio of the two as probability: an operator whose mutants never
change anything, or can never be judged, stops eating the budget. Both rates count only after a short warm-up
(``SchedulerConfig.warmup`` judged mutants): before, every operator is drawn as untried, so that a campaign starts
broad whatever its batch. Failures play no part: the scheduler never sees one.

``explore_share`` (default 0: strictly obligations first) lets retained mutants compete before phase 1 ends:
once the pool holds a retained mutant, each task is a phase-2 pick with that probability. With many
obligations and a small budget phase 1 never ends, so without it the feedback cannot act at all.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, replace
from itertools import islice

import numpy as np

from ufuzz.engine.cover import cover_order
from ufuzz.model import Obligation

#: the instability a seed starts with, before any meaning-preserving mutant of it was measured (about the mean
#: RBO divergence a rewording shows on a dense retriever)
INSTABILITY_PRIOR = 0.1


@dataclass(frozen=True)
class Task:
    case_id: str
    operator: str
    target: str
    obligation: Obligation
    phase: int  # 1: uncovered obligation, 2: retained-mutant competition
    #: drawn while phase 1 was on the task's seed (an obligation of it, or a follow-up as phase 1 left it): a mutant
    #: of it retained only after phase 1 had moved on is owed the follow-up it would have had (Scheduler._defer)
    stay: bool = False


@dataclass(frozen=True)
class StepOutcome:
    """What a task came to, as far as scheduling may know: never a reference, a verdict or a failure.

    ``valid``: a valid mutant was executed (its obligation is covered). A retained mutant joins the pool
    as ``new_case_id`` with the ``moves`` available on it and its ``energy``.
    ``final``: no mutant came, and no other try of this obligation can give one (a deterministic
    rejection) — it is not retried.
    """

    valid: bool
    final: bool = False
    retained: bool = False
    new_case_id: str | None = None
    moves: tuple[tuple[str, str], ...] = ()
    #: a retained mutant's energy in the pool (:func:`ufuzz.engine.signals.combine`: 1 plus the signals')
    energy: float = 1.0
    #: the mutant changed what the system retrieved beyond what the mutation itself says it changes (memories
    #: reached for the first time, a ranking other than the mutation predicts, memories selected for a question the
    #: memory cannot support): its operator's yield and effect rates count it
    effect: bool = False
    #: how much a meaning-preserving mutant moved its seed's ranking (None: not measured): the seed's instability
    instability: float | None = None


#: A task that produced no valid, executed mutant (rejected, not produced, or a backend error).
NO_MUTANT = StepOutcome(valid=False)


@dataclass
class PoolEntry:
    case_id: str
    seed_id: str
    moves: list[tuple[str, str]]
    energy: float
    picks: int = 0
    slot: int = -1  # its place in the scheduler's pool (and weight array)


@dataclass
class SchedulerConfig:
    attempts: int = 3  # tries per obligation in phase 1
    obligation_first: bool = True
    retain: bool = True  # False: no mutant ever joins the pool (no-feedback / random strategies)
    #: the visits after the first round follow the seeds' instability (False: no signal measures it)
    use_instability: bool = True
    operators: tuple[str, ...] | None = None  # None = all
    explore_share: float = 0.0  # chance that a task is a phase-2 pick while obligations remain (0 <= x < 1)
    use_effect: bool = True  # phase 2 draws a case's moves by their operator's effect rate (else uniformly)
    #: before phase 1 leaves a seed, up to ``burst`` × (its obligations) follow-up tasks on the mutants of it
    #: that were retained (their parent executions are cached). 0: strictly obligations first. None (auto, decided
    #: by :meth:`Scheduler.seal`): 0 when phase 1 spreads with fewer than two executions a seed, else 1 — where the
    #: budget cannot visit every seed (a visit is a parent execution and a task or two) a follow-up takes the place
    #: of a new seed's visit, whose parent reaches memory no execution has reached and whose obligations are all
    #: fresh, while depth still comes from the revisits of unstable seeds and phase 2. LoCoMo dev (264 seeds,
    #: embedded dense, 10 runs each) with follow-ups against without: at 170 executions Cov 0.287 → 0.313, causes
    #: 1.3 → 1.3; at 300 Cov 0.381 → 0.410, causes 2.5 → 3.4. Where every seed can be visited they pay: at 1000
    #: there without them 9.3 → 8.9 causes (A12 0.46; mem0 86.0 → 94.3, 3 runs), and the shipped suite at 300 (96
    #: seeds, 3 executions a seed) missed the planted stale index's write-not-found in the ground-truth test
    burst: float | None = None
    #: ... and only while the seeds started (one parent execution each) are more than this share of the
    #: seeds started plus the mutants executed, so follow-ups replace new seeds only where parents would cost
    #: more than this share of the executions
    parent_share: float = 0.2
    #: phase 1 by greedy cover and operator yield (see the module docstring) instead of seed by seed; None (auto):
    #: decided by :meth:`Scheduler.seal` — spread when the seeds' obligations are more than the budget's executions
    spread: bool | None = False
    visit: int = 2  # spread: phase-1 tasks per visit of a seed
    #: the operators' yield and effect rates count only once this many mutants were executed or finally rejected:
    #: before, every operator is drawn as one not tried yet. A campaign starts broad — as the blind first batch of
    #: a batched one does — since step by step an operator whose first few mutants changed nothing was starved
    #: before it reached what it finds (the planted stale index missed at 500 in one run of three; with 32 found
    #: in every run, by execution 5–40; 16, 32 and 128 gave LoCoMo dev 9.3, 10.0 and 9.9 causes over 10 runs)
    warmup: int = 32

    def __post_init__(self) -> None:
        if not 0.0 <= self.explore_share < 1.0:
            raise ValueError(f"explore_share must be in [0, 1), not {self.explore_share}")
        if self.burst is not None and self.burst < 0:
            raise ValueError(f"burst must be >= 0, not {self.burst}")
        if not 0.0 < self.parent_share <= 1.0:
            raise ValueError(f"parent_share must be in (0, 1], not {self.parent_share}")
        if self.visit < 1:
            raise ValueError(f"visit must be >= 1, not {self.visit}")


@dataclass
class _Pending:
    case_id: str
    obligation: Obligation
    tries: int = 0
    open: bool = True  # spread: not yet counted as done in Scheduler._open_ops


@dataclass
class _Visit:
    """A seed in the spread order: its obligations by operator, each lane in its shuffled order."""

    seed_id: str
    case_id: str
    lanes: dict[str, list[_Pending]]
    started: bool = False


class Scheduler:
    _scan = 0  # (a scheduler pickled before it had one)

    def __init__(self, rng: random.Random, config: SchedulerConfig | None = None) -> None:
        self.rng = rng
        self.config = config or SchedulerConfig()
        self._queue: deque[_Pending] = deque()
        self._scan = 0  # every obligation of the queue before this one is done or in flight (_next_pending)
        self._pool: list[PoolEntry] = []
        # each pool entry's pick weight, energy / (1 + picks), kept up to date as entries change (0: not pickable —
        # no moves left, or retired), so a pick sums one array instead of rebuilding the pool: a long campaign's
        # pool holds tens of thousands of entries
        self._weights = np.zeros(64)
        self._slots: dict[str, list[int]] = {}  # pool slots by case id
        self._covered: set[str] = set()
        self._known: set[str] = set()
        self._uncovered = 0  # len(self._known - self._covered), kept as a count
        self.phase2_picks = 0
        self._retained = 0
        self._pending_by_seed: list[tuple[str, str, dict[str, list[_Pending]]]] = []
        self._retired: set[str] = set()
        self._entries: dict[str, PoolEntry] = {}  # pool entries by case id
        self._tries: Counter[str] = Counter()  # executed mutants per operator
        self._effects: Counter[str] = Counter()  # ... that changed what the system did (see effect_rate)
        self._closed: set[str] = set()  # obligations ended by a final rejection
        self._family: dict[str, list[PoolEntry]] = {}  # retained mutants by seed id
        self._burst_left: dict[str, int] = {}  # follow-up tasks a seed may still get (see SchedulerConfig.burst)
        self._current: str | None = None  # the seed phase 1 is on
        # seeds owed a follow-up: a mutant of theirs retained after phase 1 had left them (see _defer)
        self._deferred: deque[str] = deque()
        self._started = 0  # seeds phase 1 has started (each costs a parent execution)
        self._executed = 0  # mutants executed (valid outcomes)
        # phase-1 obligations handed out and not reported yet (a parallel campaign draws a batch of tasks before
        # it reports any): another task of the batch takes the next obligation rather than a second try of it
        self._inflight: Counter[str] = Counter()
        self._finals: Counter[str] = Counter()  # tries per operator that a final rejection ended (no mutant)
        # spread (see SchedulerConfig.spread): expected reach and checkpoint per seed, the visit order, the
        # pending obligations by key, open obligations per operator, tasks left in the current visit
        self._reach: dict[str, tuple[str, frozenset[str]]] = {}
        self._visits: deque[_Visit] = deque()
        self._by_key: dict[str, _Pending] = {}
        self._by_case: dict[str, list[_Pending]] = {}
        self._open_ops: Counter[str] = Counter()
        self._visit_left = 0
        self._leaving: int = 0  # follow-up tasks still allowed on the seed a visit just left
        self._unstarted = 0  # seeds in the spread order not visited yet
        self._div_sum: Counter[str] = Counter()  # per seed: RBO divergence of its meaning-preserving mutants ...
        self._div_n: Counter[str] = Counter()  # ... and how many there were (see instability)

    # -- input ------------------------------------------------------------------------------------------
    def _allowed(self, operator: str) -> bool:
        ops = self.config.operators
        return ops is None or operator in ops

    def add_seed(self, case_id: str, seed_id: str, moves: list[tuple[str, str]], reach: frozenset[str] = frozenset(),
                 group: str = "") -> None:
        """A seed case and its obligations (operator, target); ``reach`` (spread only): the memory ids the seed's
        obligations are expected to reach, ``group`` its checkpoint."""
        self._reach[seed_id] = (group, frozenset(reach))
        moves = [(o, t) for o, t in moves if self._allowed(o)]
        by_op: dict[str, list[_Pending]] = {}
        for op, target in moves:
            ob = Obligation(seed_id, op, target)
            if ob.key in self._known:
                continue
            self._known.add(ob.key)
            self._uncovered += ob.key not in self._covered
            by_op.setdefault(op, []).append(_Pending(case_id, ob))
        self._add_entry(PoolEntry(case_id, seed_id, moves, energy=1.0))
        self._pending_by_seed.append((seed_id, case_id, by_op))
        self._burst_left[seed_id] = sum(len(v) for v in by_op.values())  # × burst, once seal() knows it

    def _add_entry(self, entry: PoolEntry) -> None:
        entry.slot = len(self._pool)
        self._pool.append(entry)
        self._entries.setdefault(entry.case_id, entry)
        self._slots.setdefault(entry.case_id, []).append(entry.slot)
        if entry.slot >= len(self._weights):
            self._weights = np.concatenate([self._weights, np.zeros(len(self._weights))])
        self._reweigh(entry)

    def _reweigh(self, entry: PoolEntry) -> None:
        """The entry's pick weight after its picks, moves or retirement changed."""
        pickable = entry.moves and entry.case_id not in self._retired
        self._weights[entry.slot] = entry.energy / (1.0 + entry.picks) if pickable else 0.0

    def seal(self, budget: int | None = None) -> None:
        """Fix the phase-1 order once all seeds are added: the seeds in shuffled order, each seed's obligations
        together as a shuffled round-robin over its operators (spread: the seeds in greedy cover order). An auto
        search (``spread`` None) spreads when the obligations are more than ``budget`` executions: walking the
        seeds one by one would spend the budget on the first seeds' every obligation — an edit that changes
        nothing included — before the feedback could say which operators change anything."""
        if self.config.spread is None:
            self.config.spread = budget is not None and len(self._known) > budget
        if self.config.burst is None:  # fewer than two executions a seed: a follow-up takes an unvisited seed's place
            few = budget is not None and budget < 2 * len(self._pending_by_seed)
            self.config.burst = 0.0 if self.config.spread and few else 1.0
        self._burst_left = {seed: int(self.config.burst * n) for seed, n in self._burst_left.items()}
        if self.config.spread:
            self._seal_spread()
            return
        groups = [by_op for _, _, by_op in self._pending_by_seed]
        self.rng.shuffle(groups)
        order: list[_Pending] = []
        for by_op in groups:
            lanes = {op: list(items) for op, items in by_op.items()}
            for items in lanes.values():
                self.rng.shuffle(items)
            names = sorted(lanes)
            self.rng.shuffle(names)
            while any(lanes[n] for n in names):
                for n in names:
                    if lanes[n]:
                        order.append(lanes[n].pop())
        if not self.config.obligation_first:
            self.rng.shuffle(order)
        self._queue = deque(order)
        self._scan = 0
        self._pending_by_seed = []

    def _seal_spread(self) -> None:
        entries = list(self._pending_by_seed)
        self.rng.shuffle(entries)  # the cover order's tie-breaking order
        visits: dict[str, _Visit] = {}
        for seed_id, case_id, by_op in entries:
            lanes = {op: list(items) for op, items in sorted(by_op.items())}
            for items in lanes.values():
                self.rng.shuffle(items)
                for p in items:
                    self._by_key[p.obligation.key] = p
                    self._by_case.setdefault(p.case_id, []).append(p)
                    self._open_ops[p.obligation.operator] += 1
            visits[seed_id] = _Visit(seed_id, case_id, lanes)
        order = cover_order([(sid, *self._reach.get(sid, ("", frozenset()))) for sid, _, _ in entries])
        self._visits = deque(visits[sid] for sid in order if any(visits[sid].lanes.values()))
        self._visit_left = self.config.visit
        self._unstarted = len(self._visits)
        self._pending_by_seed = []

    # -- output -----------------------------------------------------------------------------------------
    def next(self) -> Task | None:
        if self.config.spread and self.config.obligation_first:
            return self._next_spread()
        if self.config.obligation_first:
            share = self.config.explore_share
            if share and self._retained and self._queue and self.rng.random() < share:
                return self._pick_pool()
            p = self._next_pending()
            if p is not None:
                seed = p.obligation.seed_id
                if seed != self._current:  # leaving a seed: first its follow-up on its retained mutants
                    burst = self._burst_task()
                    if burst is not None:
                        return burst
                    self._current = seed
                    self._started += 1
                p.tries += 1
                self._inflight[p.obligation.key] += 1
                return Task(p.case_id, p.obligation.operator, p.obligation.target, p.obligation, 1, stay=True)
            burst = self._burst_task()
            if burst is not None:
                return burst
        return self._pick_pool()

    def _next_spread(self) -> Task | None:
        share = self.config.explore_share
        if share and self._retained and self._visits and self.rng.random() < share:
            return self._pick_pool()
        while self._leaving > 0:  # a visit just ended: follow-ups on the seed's retained mutants first
            self._leaving -= 1
            burst = self._burst_task()
            if burst is None:
                self._leaving = 0
                break
            return burst
        deferred = self._deferred_task()
        if deferred is not None:
            return deferred
        if self.config.use_effect and self._visits:
            # the budget goes where tasks change retrieval: when every operator still open in phase 1 yields less
            # than the best operator (which phase 2 can draw on the retained mutants and seeds), phase 1 gets the
            # task only with the ratio of the two as chance
            open_best = max((self.yield_rate(o) for o, n in self._open_ops.items() if n > 0), default=0.0)
            best = max((self.yield_rate(o) for o in self._open_ops), default=0.0)
            if open_best < best and self.rng.random() >= open_best / best:
                task = self._pick_pool()
                if task is not None:
                    return task
        forced = False
        looked = 0
        while self._visits:
            visit = self._visits[0]
            p = self._choose(visit, forced) if self._visit_left > 0 else None
            if p is not None:
                if not visit.started:
                    visit.started = True
                    self._started += 1
                    self._unstarted -= 1
                self._current = visit.seed_id
                self._visit_left -= 1
                p.tries += 1
                self._inflight[p.obligation.key] += 1
                return Task(p.case_id, p.obligation.operator, p.obligation.target, p.obligation, 1, stay=True)
            # the visit is over (or the seed has nothing to give now): the next seed; the one left goes to the
            # back while it has open obligations, after its follow-ups
            left_seed = self._visits[0].seed_id if self._visit_left < self.config.visit else None
            self._visits.popleft()
            if any(not self._done(q) for items in visit.lanes.values() for q in items):
                self._visits.append(visit)
            self._visit_left = self.config.visit
            self._bring_forward()
            looked += 1
            if looked > len(self._visits) + 1:
                if forced:
                    break  # everything open is in flight
                forced, looked = True, 0
            if left_seed is not None:
                self._current = left_seed
                self._leaving = self.config.visit
                burst = self._burst_task()
                if burst is not None:
                    self._leaving -= 1
                    return burst
                self._leaving = 0
        burst = self._burst_task()
        if burst is not None:
            return burst
        return self._pick_pool()

    def _bring_forward(self) -> None:
        """Once every seed has had its first visit, the next visit goes to a seed drawn in proportion to the square
        of its instability (:meth:`instability`): where rewordings move the ranking, the next one may move the
        evidence out of it; without feedback the visits go round."""
        if self._unstarted > 0 or not self.config.use_effect or not self.config.use_instability or not self._visits:
            return
        weights = [self.instability(v.seed_id) ** 2 for v in self._visits]
        i = self.rng.choices(range(len(self._visits)), weights=weights, k=1)[0]
        self._visits.rotate(-i)

    def instability(self, seed_id: str) -> float:
        """How much the meaning-preserving mutants of ``seed_id`` moved its ranking: their mean RBO divergence from
        their parents, smoothed towards :data:`INSTABILITY_PRIOR` (a seed not measured yet has the prior)."""
        return (self._div_sum[seed_id] + INSTABILITY_PRIOR) / (self._div_n[seed_id] + 1.0)

    def _choose(self, visit: _Visit, forced: bool) -> _Pending | None:
        """An open obligation of ``visit`` not in flight, its operator drawn by yield; None when it has none, or
        when its best operator yields too little against the best one open anywhere (with that ratio as the
        chance to go on; ``forced``: always)."""
        avail: dict[str, _Pending] = {}
        for op, items in visit.lanes.items():
            while items and self._done(items[-1]):
                self._settle(items.pop())
            p = next((q for q in reversed(items) if not self._done(q) and not self._inflight[q.obligation.key]),
                     None)
            if p is not None:
                avail[op] = p
        if not avail:
            return None
        names = list(avail)
        if not self.config.use_effect:
            return avail[names[self.rng.randrange(len(names))]]
        rates = [self.yield_rate(n) for n in names]
        best = max((self.yield_rate(o) for o, n in self._open_ops.items() if n > 0), default=max(rates))
        if not forced and max(rates) < best and self.rng.random() >= max(rates) / best:
            return None
        # squared: an operator that stopped changing anything drops out of a seed's visits fast
        return avail[self.rng.choices(names, weights=[r * r for r in rates], k=1)[0]]

    def _settle(self, p: _Pending) -> None:
        """Count a spread obligation as done once (its operator has one open obligation less)."""
        if p.open:
            p.open = False
            self._open_ops[p.obligation.operator] -= 1

    def yield_rate(self, operator: str) -> float:
        """What ``operator``'s tasks did to retrieval (spread phase 1): its effects over its executed mutants and
        its tries that a final rejection ended — a mutant that cannot be made or judged here is a try without
        effect — smoothed so that an untried operator starts at 1/2."""
        if self._warming():
            return 0.5
        return (self._effects[operator] + 1.0) / (self._tries[operator] + self._finals[operator] + 2.0)

    def _warming(self) -> bool:
        """Whether too few mutants were judged yet for the operators' rates to count (``SchedulerConfig.warmup``)."""
        return sum(self._tries.values()) + sum(self._finals.values()) < self.config.warmup

    def _next_pending(self) -> _Pending | None:
        """The first obligation of the queue still open and not in flight; those that are done are dropped
        from the front of the queue. The search starts where the last one ended (``_scan``): an obligation before
        it was done — and stays done — or in flight, until a report takes it out of flight (a batch of 128 tasks
        in flight made every draw walk past them all)."""
        while self._queue and self._done(self._queue[0]):
            self._queue.popleft()
            self._scan = max(0, self._scan - 1)
        for i, p in enumerate(islice(self._queue, self._scan, None), self._scan):
            if not self._done(p) and not self._inflight[p.obligation.key]:
                self._scan = i
                return p
        self._scan = len(self._queue)
        return None

    def _done(self, p: _Pending) -> bool:
        key = p.obligation.key
        return (key in self._covered or key in self._closed or p.tries >= self.config.attempts
                or p.case_id in self._retired)

    def _burst_task(self, seed: str | None = None) -> Task | None:
        """A follow-up task on a retained mutant of the seed phase 1 is leaving (or of ``seed``), while its share
        lasts: its parent's execution is cached, so it costs the budget one mutant execution and no parent
        execution."""
        seed = self._current if seed is None else seed
        if seed is None or self._burst_left.get(seed, 0) <= 0:
            return None
        if self._started <= self.config.parent_share * (self._started + self._executed):
            return None  # parents are a small enough share already: a new seed is the better use
        family = [e for e in self._family.get(seed, ()) if e.moves and e.case_id not in self._retired]
        if not family:
            return None
        self._burst_left[seed] -= 1
        task = self._pick_from(family)
        return replace(task, stay=True) if seed == self._current else task

    def _defer(self, seed: str) -> None:
        """A mutant of ``seed`` was retained after phase 1 had moved on to another seed — a batch is drawn before
        its results are in, so the follow-up the seed would have had when phase 1 left it (:meth:`_burst_task`)
        found no retained mutant then: it is owed now, at the next draw. A campaign stepped one task at a time
        reports every mutant of a seed before phase 1 leaves it and never defers; in batches the follow-ups come a
        batch or two late instead of never, so a rewording that moved the ranking is reworded again while the
        budget lasts, as it is step by step. Only where phase 1 spreads with follow-ups (by default, where the
        budget has two executions a seed or more): a visit is ``visit`` tasks, so in a batch nearly every visit ends before its
        results are in (LoCoMo dev, 1,000 executions, 10 runs, with follow-ups then the default: 9.1 → 9.7
        causes); walking, a seed's obligations run together and phase 2 has the budget they leave (the
        LongMemEval subset lost 1.2 causes in 5 runs to follow-ups owed while walking)."""
        if seed != self._current and self._burst_left.get(seed, 0) > 0:
            self._deferred.append(seed)

    def _deferred_task(self) -> Task | None:
        """The follow-up owed to the first seed that still has one to give (see :meth:`_defer`)."""
        while self._deferred:
            task = self._burst_task(self._deferred.popleft())
            if task is not None:
                return task
        return None

    def _pick_pool(self) -> Task | None:
        weights = self._weights[:len(self._pool)]
        pickable = np.flatnonzero(weights)
        if not len(pickable):
            return None
        if not self.config.obligation_first and not self.config.retain:
            # random strategy: uniform over seed × operator × target
            moves = [(e, m) for e in (self._pool[i] for i in pickable) for m in e.moves]
            entry, (op, target) = moves[self.rng.randrange(len(moves))]
            return self._take(entry, op, target)
        return self._move_of(self._pool[self._draw(weights, pickable)])

    def _draw(self, weights: np.ndarray, pickable: np.ndarray) -> int:
        """A pool slot with probability proportional to its weight — the very slot ``random.choices`` would
        give over the pickable entries with the same random number: the running sums of the pickable weights
        are the same floats (a zero weight adds nothing; numpy's cumsum adds left to right, as
        ``itertools.accumulate`` does), and a number past the last sum falls on the last pickable entry."""
        cum = np.cumsum(weights)
        slot = int(np.searchsorted(cum, self.rng.random() * float(cum[-1]), side="right"))
        return slot if slot < len(weights) else int(pickable[-1])

    def _pick_from(self, pool: list[PoolEntry]) -> Task:
        """An entry of ``pool`` by energy / (1 + picks), then one of its moves."""
        return self._move_of(self.rng.choices(pool, weights=[e.energy / (1.0 + e.picks) for e in pool], k=1)[0])

    def _move_of(self, entry: PoolEntry) -> Task:
        """One of the entry's moves (by effect rate, or uniformly)."""
        if self.config.use_effect:
            op, target = self.rng.choices(entry.moves, weights=[self.effect_rate(o) for o, _ in entry.moves],
                                          k=1)[0]
        else:
            op, target = entry.moves[self.rng.randrange(len(entry.moves))]
        return self._take(entry, op, target)

    def _take(self, entry: PoolEntry, op: str, target: str) -> Task:
        entry.picks += 1
        self._reweigh(entry)
        self.phase2_picks += 1
        return Task(entry.case_id, op, target, Obligation(entry.seed_id, op, target), 2)

    # -- feedback ---------------------------------------------------------------------------------------
    def report(self, task: Task, outcome: StepOutcome) -> None:
        """The outcome of a task: a valid mutant covers its obligation; a retained one joins the pool; a
        final rejection closes the obligation (phase 1) or removes the move from its pool entry (phase 2)."""
        if task.phase == 1 and self._inflight[task.obligation.key] > 0:
            self._inflight[task.obligation.key] -= 1
            if not self._inflight[task.obligation.key]:
                del self._inflight[task.obligation.key]
                self._scan = 0  # it may be open again, wherever it is in the queue
        if outcome.valid and outcome.instability is not None:
            self._div_sum[task.obligation.seed_id] += outcome.instability
            self._div_n[task.obligation.seed_id] += 1
        if outcome.valid:
            key = task.obligation.key
            if key in self._known and key not in self._covered:
                self._uncovered -= 1
            self._covered.add(key)
            self._executed += 1
            self._tries[task.operator] += 1
            if outcome.effect:
                self._effects[task.operator] += 1
        elif outcome.final:
            self._finals[task.operator] += 1
            pending = self._by_key.get(task.obligation.key)  # (only a spread scheduler keeps them)
            if task.phase == 1 or (pending is not None and pending.case_id == task.case_id):
                # (spread: a phase-2 pick on the seed itself was the same deterministic try)
                self._closed.add(task.obligation.key)
            entry = self._entries.get(task.case_id)
            if entry is not None and (task.operator, task.target) in entry.moves:
                entry.moves.remove((task.operator, task.target))
                self._reweigh(entry)
        pending = self._by_key.get(task.obligation.key)
        if pending is not None and self._done(pending):
            self._settle(pending)
        if not (outcome.valid and outcome.retained and self.config.retain and outcome.new_case_id
                and outcome.moves):
            return
        moves = [(o, t) for o, t in outcome.moves if self._allowed(o)]
        entry = PoolEntry(outcome.new_case_id, task.obligation.seed_id, moves, energy=outcome.energy)
        self._add_entry(entry)
        self._family.setdefault(entry.seed_id, []).append(entry)
        self._retained += 1
        if task.stay and self.config.spread:
            self._defer(entry.seed_id)

    def effect_rate(self, operator: str) -> float:
        """How often ``operator``'s executed mutants changed what the system did (:attr:`StepOutcome.effect`:
        memories reached for the first time, or a ranking other than the mutation predicts) — smoothed so that
        an untried operator starts at 1/2 and no operator ever drops to zero. A mutant that changes nothing
        cannot fail, so phase 2 draws a pool entry's moves in proportion to it."""
        if self._warming():
            return 0.5
        return (self._effects[operator] + 1.0) / (self._tries[operator] + 2.0)

    def retire(self, case_id: str) -> None:
        """No more tasks on ``case_id``: its remaining obligations are dropped, its pool entry never picked."""
        self._retired.add(case_id)
        for slot in self._slots.get(case_id, ()):
            self._reweigh(self._pool[slot])
        for p in self._by_case.get(case_id, ()):
            self._settle(p)

    # -- introspection ------------------------------------------------------------------------------------
    @property
    def covered(self) -> frozenset[str]:
        return frozenset(self._covered)

    @property
    def obligations(self) -> frozenset[str]:
        return frozenset(self._known)

    def uncovered(self) -> int:
        return self._uncovered

    def closed(self) -> frozenset[str]:
        """Obligations a final (deterministic) rejection ended."""
        return frozenset(self._closed)

    def pool_size(self) -> int:
        return len(self._pool)

