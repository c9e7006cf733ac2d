"""The planted defects and their clean twins ship with the package (:mod:`ufuzz.backends.adapters.planted`:
``ufuzz bench --planted`` measures strategies on them); the tests import them from here as before."""

from __future__ import annotations

from ufuzz.backends.adapters.planted import *  # noqa: F403
from ufuzz.backends.adapters.planted import CLASSES, HIDDEN, PAIRS, UNINDEXED, PlantedClass, register_all  # noqa: F401
