"""Coverage: memories of the checkpoint reached for the first time in any top-k.

The reach itself is measured by the campaign's feedback state whatever signal is on (it is what a campaign reports
as coverage); this signal makes it guidance: a mutant that reached memories no execution reached before is kept,
gains one unit of energy per memory, and changed what the system retrieved (also for a question asked anew).
"""

from __future__ import annotations

from ufuzz.engine.signals.base import Observation, Reading, Signal


class CoverageGain(Signal):
    name = "coverage"
    order = 10
    counts_asked_anew = True

    def observe(self, obs: Observation) -> Reading:
        gain = obs.gain
        return Reading(value=gain, retain=gain > 0, energy=float(gain), effect=True if gain > 0 else None)
