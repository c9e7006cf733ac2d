"""Plugins: the classes behind ``--backend NAME``, the operators, the oracle checks and the feedback signals, and
the seed importers behind ``ufuzz seeds import --format NAME``, found without a hand-kept list.

A built-in plugin is a class defined in one module of its package (``ufuzz.backends.adapters.*``,
``ufuzz.operators.*``, ``ufuzz.oracles.checks.*``, ``ufuzz.engine.signals.*``) — or in a sub-package that exports it,
for a plugin split by job — that subclasses the package's base class and names itself
with a ``name`` class attribute: adding a backend, an operator, a check or a signal is adding one module. A plugin
that is a function (a seed importer) is a module of its package (``ufuzz.seeds.importers.*``) that names itself
with a ``FORMAT`` string and defines ``load``. Another package adds its own through an entry-point group
(``ufuzz.backends``, ``ufuzz.operators``, ``ufuzz.checks``, ``ufuzz.signals``, ``ufuzz.importers``) in its
pyproject; an entry point overrides a built-in of the same name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from importlib.metadata import entry_points
from typing import Any


def _own(module: Any, obj: type) -> bool:
    """Whether ``obj`` is defined in ``module`` — or, for a plugin that is a package of its own (an adapter split by
    job: ``graphiti/``, ``http/``), in one of the package's modules."""
    name = module.__name__
    return obj.__module__ == name or (hasattr(module, "__path__") and obj.__module__.startswith(name + "."))


def _named_subclasses(module: Any, base: type) -> list[type]:
    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, base) and obj is not base
            and _own(module, obj) and not inspect.isabstract(obj)
            and isinstance(obj.__dict__.get("name"), str)]


def _modules(package: str) -> list[Any]:
    """The public modules and sub-packages of ``package`` (not ``_``-prefixed ones), imported: one plugin each."""
    pkg = importlib.import_module(package)
    return [importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(pkg.__path__)
            if not info.name.startswith("_")]


@cache
def builtin(package: str, base: type) -> dict[str, str]:
    """``name -> "module:Class"`` for the named ``base`` subclasses defined in ``package``'s own modules."""
    found: dict[str, str] = {}
    for module in _modules(package):
        for cls in _named_subclasses(module, base):
            found[cls.name] = f"{module.__name__}:{cls.__qualname__}"
    return found


@cache
def builtin_modules(package: str, marker: str, function: str = "load") -> dict[str, str]:
    """``name -> "module:function"`` for the modules of ``package`` that name themselves with a ``marker`` string
    attribute and define ``function``: plugins that are a function, not a class."""
    found: dict[str, str] = {}
    for module in _modules(package):
        name = getattr(module, marker, None)
        if isinstance(name, str) and callable(getattr(module, function, None)):
            found[name] = f"{module.__name__}:{function}"
    return found


def entry_point_specs(group: str) -> dict[str, str]:
    """``name -> "module:attr"`` of the entry points of ``group``."""
    return {ep.name: ep.value for ep in entry_points(group=group)}


def _with_entry_points(found: dict[str, str], group: str) -> dict[str, str]:
    """``found`` (the built-ins) with the entry points of ``group``, which win on a shared name."""
    return {**found, **entry_point_specs(group)}


def discover_modules(package: str, marker: str, group: str) -> dict[str, str]:
    """:func:`builtin_modules` of ``package`` plus the entry points of ``group`` (which win on a shared name)."""
    return _with_entry_points(builtin_modules(package, marker), group)


def discover(package: str, base: type, group: str) -> dict[str, str]:
    """Built-ins of ``package`` plus the entry points of ``group`` (which win on a shared name)."""
    return _with_entry_points(builtin(package, base), group)


def load(spec: str) -> Any:
    """The class (or function) named by ``"module:Class"``."""
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)
