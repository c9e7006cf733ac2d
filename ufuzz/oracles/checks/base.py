"""What an oracle check is, and what it sees.

A check is one kind of failure at one level: a :class:`Check` subclass that names its kind (``name``), its
``level`` and its place among the level's checks (``order``: the first check that fails gives the verdict). It
answers two questions — :meth:`Check.could_fail` (before execution: can this check fail on a mutant with this
reference here?) and :meth:`Check.find` (after: the memories at fault, or None when it passes) — from a view of
the execution that its level computes once (:class:`Selected`, :class:`Responded`). Response checks are asked only
about a response that does not pass (:attr:`Responded.passed`: right, or an abstention where the reference abstains).
A check is a built-in module of :mod:`ufuzz.oracles.checks` or an entry point: lanes in other processes and
``corpus check`` know the checks those name, not a class defined elsewhere.

A subclass registers itself by defining it (``__init_subclass__``), so that the campaign (which imports the
package's modules and its entry points, :mod:`ufuzz.oracles.checks`) and the standalone reproducer (which
executes the code of the modules that define the registered checks, no ufuzz installed) see the same checks; a
later definition of a name replaces an earlier one (an entry point's check replaces a built-in of that name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

#: the levels a check may judge at
LEVELS = ("selection", "response")


class Check:
    """One kind of failure at one level. Subclasses set ``name``, ``level`` and ``order``."""

    name: ClassVar[str]
    level: ClassVar[str]
    order: ClassVar[int] = 100
    _registry: ClassVar[dict[str, type[Check]]] = {}
    _ordered: ClassVar[dict[str, list[Check]]] = {}  # per level, rebuilt when a check registers
    #: loads the checks that are not built in (entry points), once, when the checks are first asked for
    _loader: ClassVar[Callable[[], None] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("name"), str):
            Check._registry[cls.name] = cls
            Check._ordered.clear()

    def could_fail(self, reference: Any, deleted: tuple[str, ...], threshold: float | None) -> bool:
        """Whether this check can fail on a mutant with ``reference`` whose own operations deleted ``deleted``,
        judged with the backend's relevance ``threshold`` (None: it declares none). Response checks are asked only
        where something responds."""
        raise NotImplementedError

    def find(self, seen: Any) -> tuple[str, ...] | None:
        """The memories at fault when the check fails (possibly none), None when it passes."""
        raise NotImplementedError


def registered() -> dict[str, type[Check]]:
    """Every registered check by name, the ones not built in loaded first (once)."""
    if Check._loader is not None:
        load, Check._loader = Check._loader, None
        load()
    return Check._registry


def checks_of(level: str) -> list[Check]:
    """The registered checks of ``level``, in their order (then by name)."""
    registered()
    got = Check._ordered.get(level)
    if got is None:
        got = sorted((cls() for cls in Check._registry.values() if cls.level == level),
                     key=lambda c: (c.order, c.name))
        Check._ordered[level] = got
    return got


@dataclass(frozen=True)
class Selected:
    """What the selection checks see of one execution: the reference, the ids the system handed on (its top-k cut
    at its own threshold), what the case deleted, the invalidated memories among everything (the reference's and
    versions an in-place update overwrote) and the ranks of the supporting memories in ``top``."""

    reference: Any
    top: list[str]
    deleted: frozenset[str]
    invalid: frozenset[str]
    support: list[int]
    threshold: float | None

    @cached_property
    def above(self) -> list[str]:
        """Invalidated memories ranked above every supporting one (all of them in ``top`` when none is there)."""
        return [i for i in (self.top[:self.support[0]] if self.support else self.top) if i in self.invalid]


@dataclass(frozen=True)
class Responded:
    """What the response checks see of one response: the reference, whether it is right or an abstention (by text
    or by the judge's label), the stale values it contains, the memories that carry them, and the top-ranked
    memory (what a wrong answer is blamed on)."""

    reference: Any
    right: bool
    abstained: bool
    stale: list[str]
    carriers: tuple[str, ...]
    top1: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Right, or an abstention where the reference abstains: no response check applies."""
        return self.abstained if self.reference.abstain else self.right
