#!/usr/bin/env bash
# Idempotent set-up: a virtualenv with torch (CPU, pinned) first, then ufuzz and what its tests need.
#   UFUZZ_VENV    where the virtualenv lives (default: .venv in the checkout)
#   UFUZZ_EXTRAS  comma-separated extras to install besides "dev" (e.g. "mem0,graphiti,amem")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${UFUZZ_VENV:-$here/.venv}"
extras="dev${UFUZZ_EXTRAS:+,$UFUZZ_EXTRAS}"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
stamp="$venv/.ufuzz-install-$(cat "$here/pyproject.toml" "$here/scripts/install.sh" | sha1sum | cut -c1-12)-${extras//,/_}"
if [ -f "$stamp" ]; then
  exit 0
fi
# torch first and pinned: anything unpinned that depends on it would otherwise pull a multi-GB CUDA build.
# --no-compile: Python compiles a module's bytecode when it is first imported; compiling every file of every package
# at install time (torch's alone: 50 s against 14 s without, on the 2-core machine) is most of the install's time.
"${pip[@]}" install --no-compile "torch==2.13.0"
"${pip[@]}" install --no-compile -e "$here[$extras]"
touch "$stamp"
