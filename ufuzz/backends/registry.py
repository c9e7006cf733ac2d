"""Backend registry: adapters are found through the ``ufuzz.backends`` entry-point group.

An outside package registers its own backend in its pyproject::

    [project.entry-points."ufuzz.backends"]
    mystore = "mystore_ufuzz:MyStoreBackend"

``register`` adds one at run time (tests, notebooks). Built-in adapters are the named
:class:`~ufuzz.backends.protocol.MemoryBackend` subclasses of the modules of :mod:`ufuzz.backends.adapters`
(:mod:`ufuzz.plugins`): a new adapter is one module there (or one package, split by job), listed nowhere else.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ufuzz import plugins
from ufuzz.backends.protocol import BackendUnavailable, MemoryBackend

GROUP = "ufuzz.backends"

_runtime: dict[str, type[MemoryBackend]] = {}


def register(name: str, cls: type[MemoryBackend]) -> None:
    _runtime[name] = cls


def available() -> dict[str, str]:
    """name -> 'module:Class' for every known backend (entry points override built-ins)."""
    found = plugins.discover("ufuzz.backends.adapters", MemoryBackend, GROUP)
    for name, cls in _runtime.items():
        found[name] = f"{cls.__module__}:{cls.__qualname__}"
    return dict(sorted(found.items()))


def load(name: str) -> type[MemoryBackend]:
    if name in _runtime:
        return _runtime[name]
    spec = available().get(name)
    if spec is None:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(available())}")
    module, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:  # the adapter module itself imports its library lazily; this is a bug
        raise BackendUnavailable(f"backend {name!r} could not be imported: {exc}") from exc
    return getattr(mod, attr)


ISOLATION = ("auto", "process", "none")


def create(name: str, workdir: Path, options: dict[str, Any] | None = None, *, isolation: str = "none",
           worker: dict[str, Any] | None = None) -> MemoryBackend:
    """A backend instance. ``isolation``: "none" runs it in this process, "process" in a recyclable worker
    process (``ufuzz.backends.worker``), "auto" in a worker when the adapter sets ``isolate`` (native
    libraries). ``worker`` holds the worker's settings (recycle_every, max_rss_mb, call_timeout)."""
    if isolation not in ISOLATION:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}, not {isolation!r}")
    return instantiate(name, load(name), workdir, options, isolation=isolation, worker=worker)


def instantiate(name: str, cls: type[MemoryBackend], workdir: Path, options: dict[str, Any] | None = None, *,
                isolation: str = "none", worker: dict[str, Any] | None = None) -> MemoryBackend:
    """An instance of the backend class ``cls`` registered as ``name`` (see :func:`create`): what another
    process (a campaign's lane) that does not share this one's registrations uses, given the class itself."""
    if isolation not in ISOLATION:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}, not {isolation!r}")
    cls.check_options(options)  # a bad option fails here, before a worker process is started for it
    ok, hint = cls.dependencies_installed()
    if not ok:
        raise BackendUnavailable(f"backend {name!r} needs packages that are not installed", hint)
    if isolation == "process" or (isolation == "auto" and cls.isolate):
        from ufuzz.backends.worker import wrap

        return wrap(name, cls, Path(workdir), options or {}, **(worker or {}))
    return cls(Path(workdir), options or {})
