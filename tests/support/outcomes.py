"""A scheduler's step outcome as the built-in feedback signals make it of what an execution showed: tests of the
scheduler state memories reached for the first time and a ranking's divergence, and the signals' own
combination (:func:`ufuzz.engine.signals.combine`) gives the energy, the effect and the instability."""

from __future__ import annotations

from functools import cache
from typing import Any

from ufuzz.engine import signals
from ufuzz.engine.scheduler import StepOutcome
from ufuzz.engine.signals import Reading
from ufuzz.engine.signals.divergence import NOISE, WEIGHT


@cache
def _built_in() -> dict[str, signals.Signal]:
    """The built-in signals by name (looked up once: entry points are read from every installed package)."""
    return {s.name: s for s in signals.active()}


def outcome(valid: bool = True, *, coverage_gain: int = 0, divergence: float | None = None,
            meaning_preserving: bool = False, asks_anew: bool = False, unexpected: bool = False,
            **kw: Any) -> StepOutcome:
    """``StepOutcome(valid, **kw)`` whose energy, effect and instability are what the coverage, unexpected-selection
    and divergence signals read from ``coverage_gain`` memories reached first, memories selected for a question the
    memory cannot support (``unexpected``) and a ``divergence`` (None: not measured)."""
    by = _built_in()
    gain = coverage_gain
    readings = [(by["coverage"], Reading(gain, gain > 0, float(gain), True if gain > 0 else None)),
                (by["unexpected"], Reading(unexpected, effect=True if unexpected else None))]
    if divergence is not None:
        mp = meaning_preserving
        readings.append((by["divergence"], Reading(divergence, False, WEIGHT * divergence if mp else 0.0,
                                                   divergence > NOISE, divergence if mp else None)))
    fb = signals.combine(readings)
    return StepOutcome(valid, energy=fb.energy, effect=fb.effect(asks_anew=asks_anew, kept=kw.get("retained", False)),
                       instability=fb.instability, **kw)
