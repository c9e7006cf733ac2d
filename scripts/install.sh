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
# --no-compile, then compileall on every core: pip compiles the installed files one at a time (torch's alone: 50 s
# against 14 s without, then 17 s for compileall on 2 cores). The bytecode must be written here: where
# PYTHONDONTWRITEBYTECODE is set (as on the development machine) no process writes it later, and every process that
# imports torch compiles it anew (~20 s each). Files a package ships that do not compile are skipped, as pip skips them.
"${pip[@]}" install --no-compile "torch==2.13.0"
"${pip[@]}" install --no-compile -e "$here[$extras]"
purelib="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$venv/bin/python" -m compileall -q -j0 "$purelib" "$here/ufuzz" > /dev/null || true
touch "$stamp"
