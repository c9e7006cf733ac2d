"""The plain world of the planted-defect tests (:mod:`ufuzz.seeds.planted_world`, shipped with the package for
``ufuzz bench --planted``) and its committed copy: ``python -m tests.support.planted_world`` rewrites
``tests/fixtures/planted/plain_world.jsonl``."""

from __future__ import annotations

from pathlib import Path

from ufuzz.seeds.io import write_suite
from ufuzz.seeds.planted_world import ATTRIBUTES, PEOPLE, VALUE_TYPES, plain_world

__all__ = ["ATTRIBUTES", "PATH", "PEOPLE", "VALUE_TYPES", "plain_world", "write"]

PATH = Path(__file__).resolve().parents[1] / "fixtures" / "planted" / "plain_world.jsonl"


def write(path: Path = PATH) -> Path:
    return write_suite(plain_world(), path, header={"generator": "tests.support.planted_world.plain_world"})


if __name__ == "__main__":
    print(write())
