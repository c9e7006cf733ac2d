"""What a feedback signal is, and what it sees.

A signal is one thing the campaign learns from a mutant's execution: a :class:`Signal` subclass that names itself
(``name``) and reads an :class:`Observation` — the execution, its parent's, what the mutant's own operations
predict of the ranking, and the operator's own claims about its mutation — into a :class:`Reading`: a value (what
the corpus records under the signal's name), whether the mutant is kept for it, the energy it adds to a kept
mutant, whether the mutant changed what the system retrieved beyond what its mutation says (an effect: the
operators' yield), and how much a meaning-preserving mutant moved its seed's ranking (the seed's instability).
The scheduler sees only those (:func:`combine`): never the signals' names, and never a reference, a verdict or a
failure — an observation carries none.

The built-ins are the modules of :mod:`ufuzz.engine.signals` (one named ``Signal`` subclass each), others entry
points of group ``ufuzz.signals``. A signal keeps what it needs to remember (the rankings seen per seed, …) on its
instance: the campaign's feedback state holds one instance of each signal, calls ``observe`` under its lock (a
signal must not call back into it) and is pickled whole for resume, so a signal's state must pickle; its values
are written to the run database as JSON. Every execution is observed, the seeds' own (``parent`` None) too; an
ablated signal is observed and guides nothing. ``order`` places a signal among the others: the first opinion on an
effect wins, energies are added in that order and the first instability measured is the seed's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ufuzz.model import Execution


@dataclass(frozen=True)
class Observation:
    """One execution as the signals see it. ``gain``: the checkpoint memories it reached for the first time
    (measured whatever signal is on: coverage is also what a campaign reports); ``expected``: the parent's top-k as
    the mutant's own state operations predict it (None: the parent's own); ``hidden``: the backend exposes a
    response and no ranking; ``meaning_preserving``/``unanswerable``: the operator's claims about its mutation;
    ``threshold``: the backend's own relevance threshold (None: it declares none)."""

    seed_id: str
    checkpoint_id: str
    execution: Execution
    parent: Execution | None = None
    expected: Sequence[str] | None = None
    gain: int = 0
    hidden: bool = False
    p: float = 0.9
    meaning_preserving: bool = False
    unanswerable: bool = False
    threshold: float | None = None


@dataclass(frozen=True)
class Reading:
    """What one signal made of one execution (see the module docstring); ``effect`` None: it says nothing either
    way."""

    value: Any = None
    retain: bool = False
    energy: float = 0.0
    effect: bool | None = None
    instability: float | None = None


class Signal:
    """One feedback signal. Subclasses set ``name`` and define :meth:`observe`."""

    name: ClassVar[str]
    #: the place of its opinion on an effect among the signals' (the first that has one decides; see :func:`combine`)
    order: ClassVar[int] = 100
    #: its effect counts for a mutant that asks another question than its parent (a target change, an unsupported
    #: target), whose changed ranking is its design: memories reached for the first time, memories selected for a
    #: question the memory cannot support
    counts_asked_anew: ClassVar[bool] = False
    #: it measures how much meaning-preserving mutants move their seed's ranking (the scheduler's next visits follow
    #: it once every seed was visited)
    measures_instability: ClassVar[bool] = False

    def observe(self, obs: Observation) -> Reading:
        raise NotImplementedError

    def totals(self) -> dict[str, int]:
        """What it remembers, counted (the campaign's feedback totals; a key of the state's own is refused)."""
        return {}


@dataclass(frozen=True)
class Combined:
    """The readings of one execution, as the scheduler takes them: ``retained`` is what the signals ask for (the
    step keeps the mutant only within ``max_depth`` and where retention is on)."""

    values: dict[str, Any]
    retained: bool
    energy: float
    instability: float | None
    readings: tuple[tuple[Signal, Reading], ...] = ()

    def effect(self, *, asks_anew: bool, kept: bool) -> bool:
        """Whether the mutant changed what the system retrieved beyond what its mutation says it changes: a signal
        that counts for a question asked anew says so; else — not for a question asked anew — the first signal with
        an opinion (the ranking's divergence from the predicted one); with none (hidden retrieval, no divergence
        measured), whether the mutant was kept (a new response, a new ranking)."""
        if any(r.effect and s.counts_asked_anew for s, r in self.readings):
            return True
        if asks_anew:
            return False
        for _, r in self.readings:
            if r.effect is not None:
                return r.effect
        return kept


def combine(readings: Sequence[tuple[Signal, Reading]]) -> Combined:
    """The signals' readings (in the signals' order) as one: kept when any keeps it, energy 1 plus theirs (added in
    that order: a pool's draws follow its energies to the last bit), the first instability measured."""
    energy = 1.0
    for _, r in readings:
        energy += r.energy
    return Combined(values={s.name: r.value for s, r in readings}, retained=any(r.retain for _, r in readings),
                    energy=energy,
                    instability=next((r.instability for _, r in readings if r.instability is not None), None),
                    readings=tuple(readings))
