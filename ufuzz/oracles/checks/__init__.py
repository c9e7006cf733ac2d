"""Oracle checks, one module each: a kind of failure at one level (:class:`~ufuzz.oracles.checks.base.Check`).

Selection level (retrieval visible): ``deleted_evidence_retrieved``, ``missing_evidence``,
``stale_ranked_above_valid``, ``unsupported_retrieved``. Response level (the system under test responded):
``false_abstention``, ``stale_answer``, ``unsupported_answer``, ``wrong_answer``. Adding a check is adding a module
here, or an entry point of group ``ufuzz.checks`` (``name = "pkg.module:Class"``, the entry point named as the
class's ``name``), whose ``Check`` subclass names its ``name``, ``level`` and ``order`` and defines nothing else at
the module's top level but what it imports (the standalone reproducer runs every check module's code in one
namespace). The kinds, :func:`ufuzz.oracles.oracle.could_fail` and the reproducer follow from the registered checks.

The built-ins are imported with this package; the entry points when the checks are first asked for
(:func:`~ufuzz.oracles.checks.base.checks_of`), so that a plugin module may import this package itself.
"""

from __future__ import annotations

from ufuzz import plugins
from ufuzz.oracles.checks.base import LEVELS, Check, Responded, Selected, checks_of, registered

__all__ = ["Check", "Responded", "Selected", "checks_of", "modules"]

plugins.builtin(__name__, Check)  # imports the built-in check modules: each check registers by its definition


def _load_entry_points() -> None:
    """Load the checks of group ``ufuzz.checks``; a clear error for one that is not a check."""
    for name, spec in plugins.entry_point_specs("ufuzz.checks").items():
        cls = plugins.load(spec)
        if not (isinstance(cls, type) and issubclass(cls, Check)) or cls.__dict__.get("name") != name \
                or cls.level not in LEVELS:
            raise TypeError(f"entry point {name} = {spec!r} of group ufuzz.checks is not a check: a Check subclass "
                            f"whose name is {name!r} and whose level is one of {list(LEVELS)}")


Check._loader = _load_entry_points


def modules() -> list[str]:
    """The modules that define the registered checks, each after the modules of the checks it derives from: what
    the standalone reproducer embeds, in order."""
    out: list[str] = []
    for cls in registered().values():
        for klass in reversed(cls.__mro__):
            if isinstance(klass, type) and issubclass(klass, Check) and klass is not Check \
                    and klass.__module__ not in out:
                out.append(klass.__module__)
    return out
