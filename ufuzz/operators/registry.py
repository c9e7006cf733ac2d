"""The operator registry: built-ins are the named :class:`~ufuzz.operators.base.Operator` subclasses of this
package's modules; other packages add theirs through the ``ufuzz.operators`` entry-point group::

    [project.entry-points."ufuzz.operators"]
    swap_speaker = "mypkg.ops:SwapSpeaker"

A new operator is one module (and its tests). Campaigns, strategies and ``ufuzz strategies`` list operators
from here, in ``(order, name)`` order.
"""

from __future__ import annotations

from typing import Any

from ufuzz import plugins
from ufuzz.operators.base import Operator

GROUP = "ufuzz.operators"
KINDS = ("query", "state")


def classes() -> dict[str, type[Operator]]:
    """Every registered operator class by name, in campaign order."""
    found = {name: plugins.load(spec) for name, spec in plugins.discover("ufuzz.operators", Operator, GROUP).items()}
    bad = [n for n, c in found.items() if not (isinstance(c, type) and issubclass(c, Operator)) or c.kind not in KINDS]
    if bad:
        raise TypeError(f"not operators (an Operator subclass of kind {' or '.join(KINDS)}): {bad}")
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def names(kind: str | None = None, *, opt_in: bool = False) -> tuple[str, ...]:
    """Operator names in campaign order; only those of ``kind`` ("query" or "state") when given; opt-in
    operators (:attr:`Operator.opt_in`) only with ``opt_in``."""
    return tuple(n for n, c in classes().items() if (kind is None or c.kind == kind) and (opt_in or not c.opt_in))


def create_all(*, realizer: Any = None, only: tuple[str, ...] | None = None) -> dict[str, Operator]:
    """Fresh instances for one campaign, by name in campaign order (``only``: a subset of names; without it,
    every operator that is not opt-in)."""
    cls = classes()
    unknown = sorted(set(only or ()) - set(cls))
    if unknown:
        raise ValueError(f"unknown operator(s) {unknown}; known: {', '.join(cls)}")
    return {n: c.create(realizer=realizer) for n, c in cls.items()
            if (only is None and not c.opt_in) or (only is not None and n in only)}
