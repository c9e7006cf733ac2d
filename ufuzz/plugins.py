"""Plugins: the classes behind ``--backend NAME`` and the operators, found without a hand-kept list.

A built-in plugin is a class defined in one module of its package (``ufuzz.backends.*``, ``ufuzz.operators.*``)
that subclasses the package's base class and names itself with a ``name`` class attribute: adding a backend or
an operator is adding one module. Another package adds its own through an entry-point group
(``ufuzz.backends``, ``ufuzz.operators``) in its pyproject; an entry point overrides a built-in of the same name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from importlib.metadata import entry_points


def _named_subclasses(module: object, base: type) -> list[type]:
    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, base) and obj is not base
            and obj.__module__ == module.__name__ and not inspect.isabstract(obj)
            and isinstance(obj.__dict__.get("name"), str)]


@cache
def builtin(package: str, base: type) -> dict[str, str]:
    """``name -> "module:Class"`` for the named ``base`` subclasses defined in ``package``'s own modules."""
    found: dict[str, str] = {}
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for cls in _named_subclasses(module, base):
            found[cls.name] = f"{module.__name__}:{cls.__qualname__}"
    return found


def discover(package: str, base: type, group: str) -> dict[str, str]:
    """Built-ins of ``package`` plus the entry points of ``group`` (which win on a shared name)."""
    found = dict(builtin(package, base))
    for ep in entry_points(group=group):
        found[ep.name] = ep.value
    return found


def load(spec: str) -> type:
    """The class named by ``"module:Class"``."""
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)
