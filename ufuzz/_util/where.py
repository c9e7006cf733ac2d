"""Where this ufuzz is: what a child process puts first on its import path."""

from __future__ import annotations

import os
from pathlib import Path


def package_root() -> Path:
    """The folder holding the ``ufuzz`` package: first on a child process's PYTHONPATH (a backend worker, a lane, a
    Ray worker), so that it imports the very ufuzz its parent runs — a source checkout as well as an install."""
    return Path(__file__).resolve().parents[2]


def child_pythonpath() -> str:
    """The PYTHONPATH of a child process: :func:`package_root` first, then this process's own."""
    return os.pathsep.join([str(package_root()), *filter(None, [os.environ.get("PYTHONPATH")])])


def child_env() -> dict[str, str]:
    """This process's environment with :func:`child_pythonpath`: what a backend worker or a lane is started with."""
    return {**os.environ, "PYTHONPATH": child_pythonpath()}
