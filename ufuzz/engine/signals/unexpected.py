"""Unexpected selection: memories selected, at or above the backend's own relevance threshold, for a question its
operation says the memory cannot support (an unsupported target).

The operation predicts nothing is selected, so anything selected is a change it did not predict — an effect, as a
ranking other than a state operation predicts is one. Without a threshold nothing is predicted. It reads the
execution and the operator's claim only, never the mutant's reference or verdict.
"""

from __future__ import annotations

from ufuzz.engine.signals.base import Observation, Reading, Signal
from ufuzz.oracles.expectations import selected


class Unexpected(Signal):
    name = "unexpected"
    order = 20
    counts_asked_anew = True

    def observe(self, obs: Observation) -> Reading:
        hit = obs.unanswerable and obs.threshold is not None and bool(selected(obs.execution, obs.threshold))
        return Reading(value=hit, effect=True if hit else None)
