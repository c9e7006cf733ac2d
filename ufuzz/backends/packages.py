"""What an adapter asks of the installed packages: a distribution's version (for ``describe``) and whether its
library's modules are there (for ``dependencies_installed``), without importing them."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version


def pkg_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def modules_found(*modules: str) -> bool:
    """Whether every one of ``modules`` can be imported (found, not imported: a library is loaded on first use)."""
    for mod in modules:
        try:
            if importlib.util.find_spec(mod) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True
