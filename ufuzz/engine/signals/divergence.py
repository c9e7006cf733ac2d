"""Divergence: how far the mutant's ranking moved from its parent's, as rank-biased overlap measures it.

For a mutant that changed the memory state the parent's top-k is the one its own operations predict
(:func:`ufuzz.engine.feedback.expected_top`: what it deleted gone, what it updated in its old place): a delete that
removes what it removed changes nothing unexpected, an update whose old version stays where its new one should be
does. A divergence above rounding noise is an effect (not for a question asked anew, whose ranking differs by
design). For a meaning-preserving mutant it adds ``WEIGHT`` × divergence to the energy and measures its seed's
instability. Never measured for hidden retrieval or without a parent execution.
"""

from __future__ import annotations

from collections.abc import Sequence

from ufuzz.engine.rbo import rbo_divergence
from ufuzz.engine.signals.base import Observation, Reading, Signal

#: RBO divergences at or below this are equal rankings (rbo_ext of two equal lists is 1 within a rounding error
#: for some persistences and depths)
NOISE = 1e-9
#: the energy a meaning-preserving mutant gains per unit of divergence
WEIGHT = 2.0


def divergence(before: Sequence[str], after: Sequence[str], p: float, predicted: bool) -> float:
    """RBO divergence of ``after`` from ``before``. A predicted ranking (:func:`expected_top`) is a prefix of what the
    mutant may rank — memories below the parent's top-k move up into the places its operations emptied — so an
    empty prediction (the operations removed every memory the parent ranked; ``predicted`` only where the parent
    ranked some — a state that now ranks what its parent ranked nothing of has changed) is the prefix of any
    ranking: nothing it predicted is contradicted, as RBO says of every other prefix."""
    if predicted and not before:
        return 0.0
    return rbo_divergence(before, after, p)


class Divergence(Signal):
    name = "divergence"
    order = 40
    measures_instability = True

    def observe(self, obs: Observation) -> Reading:
        parent = obs.parent
        if obs.hidden or parent is None or parent.error is not None:
            return Reading()
        d = divergence(parent.top_ids if obs.expected is None else obs.expected, obs.execution.top_ids, obs.p,
                       predicted=obs.expected is not None and bool(parent.top_ids))
        mp = obs.meaning_preserving
        return Reading(value=d, energy=WEIGHT * d if mp else 0.0, effect=d > NOISE, instability=d if mp else None)
