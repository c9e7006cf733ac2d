"""Feedback signals, one module each (:class:`~ufuzz.engine.signals.base.Signal`): ``coverage`` (memories reached
for the first time), ``unexpected`` (memories selected for a question the memory cannot support), ``novelty`` (a
ranking, or a response, not seen before for the seed), ``divergence`` (how far the ranking moved from the one the
mutation predicts). Adding a signal is adding a module here, or an entry point of group ``ufuzz.signals``
(``name = "pkg.module:Class"``, named as the class's ``name``); ``--strategy no-NAME`` runs the full method without
it. The scheduler sees what they make of an execution (:func:`~ufuzz.engine.signals.base.combine`), never them.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache

from ufuzz import plugins
from ufuzz.engine.signals.base import Combined, Observation, Reading, Signal, combine

__all__ = ["Combined", "Observation", "Reading", "Signal", "active", "combine", "names"]


@cache
def registered() -> dict[str, type[Signal]]:
    """Every signal by name: the built-ins and the entry points of group ``ufuzz.signals`` (which win on a name);
    a clear error for an entry point that is not a signal. Looked up once per process (reading the entry points
    scans every installed package); ``registered.cache_clear()`` looks again."""
    found: dict[str, type[Signal]] = {}
    for name, spec in plugins.discover(__name__, Signal, "ufuzz.signals").items():
        cls = plugins.load(spec)
        if not (isinstance(cls, type) and issubclass(cls, Signal)) or cls.__dict__.get("name") != name:
            raise TypeError(f"entry point {name} = {spec!r} of group ufuzz.signals is not a signal: a Signal "
                            f"subclass whose name is {name!r}")
        found[name] = cls
    return found


def names() -> list[str]:
    """The signals' names, in their order."""
    return [cls.name for cls in sorted(registered().values(), key=lambda c: (c.order, c.name))]


def active(off: Collection[str] = ()) -> list[Signal]:
    """One fresh instance of every signal, in their order — those named in ``off`` (an ablation) too: they are
    still observed, so that what they measure is counted on the same footing as in a full campaign (the distinct
    responses ``ufuzz bench`` reports where retrieval is hidden), and guide nothing (:class:`ufuzz.engine.feedback.FeedbackState`)."""
    found = registered()
    unknown = set(off) - set(found)
    if unknown:
        raise ValueError(f"unknown feedback signal(s) {', '.join(sorted(unknown))}; one of: {', '.join(names())}")
    return [found[n]() for n in names()]
