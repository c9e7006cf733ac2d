"""Where this ufuzz is: what a child process puts first on its import path."""

from __future__ import annotations

from pathlib import Path


def package_root() -> Path:
    """The folder holding the ``ufuzz`` package: first on a child process's PYTHONPATH (a backend worker, a lane, a
    Ray worker), so that it imports the very ufuzz its parent runs — a source checkout as well as an install."""
    return Path(__file__).resolve().parents[2]
