"""Oracle checks, one module each: a kind of failure at one level (:class:`~ufuzz.oracles.checks.base.Check`).

Selection level (retrieval visible): ``deleted_evidence_retrieved``, ``missing_evidence``,
``stale_ranked_above_valid``, ``unsupported_retrieved``. Response level (the system under test responded):
``false_abstention``, ``stale_answer``, ``unsupported_answer``, ``wrong_answer``. Adding a check is adding a module
here (or an entry point of group ``ufuzz.checks``: a module whose ``Check`` subclass names its ``name``,
``level`` and ``order``); the kinds, :func:`ufuzz.oracles.oracle.could_fail` and the standalone reproducer follow
from the registered checks.
"""

from __future__ import annotations

from ufuzz import plugins
from ufuzz.oracles.checks.base import Check, Responded, Selected, checks_of

__all__ = ["Check", "Responded", "Selected", "checks_of", "modules"]

#: the modules that define the checks, built-ins first, then the entry points (which replace a built-in's name)
modules: list[str] = []
for _spec in plugins.discover(__name__, Check, "ufuzz.checks").values():
    _cls = plugins.load(_spec)
    if _cls.__module__ not in modules:
        modules.append(_cls.__module__)
