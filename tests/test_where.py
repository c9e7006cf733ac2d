"""A child process (a backend worker, a lane, a Ray worker) is given the folder that holds the very ufuzz package its
parent runs, wherever the module that starts it sits in the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ufuzz
from ufuzz._util.where import package_root


def test_the_package_root_holds_this_ufuzz():
    assert (package_root() / "ufuzz" / "__init__.py").is_file()
    assert package_root() == Path(ufuzz.__file__).resolve().parents[1]


def test_a_child_given_the_root_imports_this_ufuzz_from_anywhere(tmp_path):
    code = "import ufuzz, sys; sys.stdout.write(ufuzz.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True,
                         env={"PYTHONPATH": str(package_root()), "PATH": ""}).stdout
    assert Path(out).resolve() == Path(ufuzz.__file__).resolve()
