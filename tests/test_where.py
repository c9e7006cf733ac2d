"""A child process (a backend worker, a lane, a Ray worker) is given the folder that holds the very ufuzz package its
parent runs, wherever the module that starts it sits in the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ufuzz
from ufuzz._util.where import child_env, child_pythonpath, package_root


def test_the_package_root_holds_this_ufuzz():
    assert (package_root() / "ufuzz" / "__init__.py").is_file()
    assert package_root() == Path(ufuzz.__file__).resolve().parents[1]


def test_a_child_started_with_the_child_environment_imports_this_ufuzz_from_anywhere(tmp_path, monkeypatch):
    """``-S``: no site-packages, so no installed (or editable) ufuzz to fall back on — only the PYTHONPATH it was
    given can find the package."""
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    assert child_pythonpath().split(os.pathsep) == [str(package_root()), str(tmp_path / "elsewhere")]
    code = "import ufuzz, sys; sys.stdout.write(ufuzz.__file__)"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env=child_env(), check=True).stdout
    assert Path(out).resolve() == Path(ufuzz.__file__).resolve()
