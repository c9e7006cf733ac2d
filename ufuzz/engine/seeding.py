"""A new campaign's start: its seeds become cases and obligations.

Everything a new campaign's search begins from is made here, once, in an order fixed by the seeds' ids (so the
same suite and ``--seed`` give the same campaign): the feedback state tracking the checkpoints, the scheduler
with its random generator, and for every seed its case, its reference (to the oracle, never the scheduler) and
its obligations — one per operator and target that applies to it. A resumed campaign does not come here: it
goes on from its snapshot (:mod:`ufuzz.engine.journal`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ufuzz.engine.cover import expected_reach
from ufuzz.engine.feedback import FeedbackState
from ufuzz.engine.scheduler import Scheduler, SchedulerConfig
from ufuzz.engine.state import SearchState
from ufuzz.engine.strategies import ablated_signals
from ufuzz.model import FuzzCase, SeedSuite

__all__ = ["sow"]


def sow(search: SearchState, suite: SeedSuite, config: Any, *, operators: dict[str, Any], spread: bool | None,
        moves: Callable[[FuzzCase], list[tuple[str, str]]], oracle: Any, store: Any, campaign_id: str,
        setup: Callable[[str], None]) -> int:
    """Make ``search``'s feedback and scheduler and give them ``suite``'s seeds (recorded in ``store``, their
    references given to ``oracle``); ``spread``: phase 1 spreads over the seeds (None: when the obligations are more
    than the budget). Returns how many seeds."""
    cfg = config
    search.feedback = FeedbackState(ablated_signals(cfg.ablation), p=cfg.p)
    search.feedback.track(list(suite.checkpoints.values()))
    search.scheduler = Scheduler(random.Random(cfg.seed), SchedulerConfig(
        attempts=cfg.attempts, obligation_first=cfg.obligation_first, retain=cfg.retain,
        use_instability=any(sig.measures_instability for sig in search.feedback.guiding),
        operators=tuple(operators), explore_share=cfg.explore_share,
        use_effect=cfg.retain, spread=spread if cfg.obligation_first else False))
    memories = sum(len(cp.memories) for cp in suite.checkpoints.values())
    setup(f"recording {len(suite.checkpoints)} checkpoints ({memories:,} memories) and {len(suite.seeds)} seeds")
    for cp in suite.checkpoints.values():
        store.record_checkpoint(campaign_id, cp)
    seeds = sorted(suite.seeds, key=lambda seed: seed.id)
    for seed in seeds:
        cp = suite.checkpoint_of(seed)
        case = FuzzCase.from_seed(seed, cp)
        search.cases.add_seed(case)
        oracle.add_seed(case, suite.reference_of(seed))
        store.record_seed(campaign_id, seed)
        search.scheduler.add_seed(case.id, seed.id, moves(case), reach=expected_reach(seed, cp), group=cp.id)
    search.scheduler.seal(budget=cfg.budget)
    return len(seeds)
