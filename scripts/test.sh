#!/usr/bin/env bash
# Runs ruff and the test suite in the given virtualenv. Extra arguments go to pytest.
# pytest's exit 5 ("no tests collected", e.g. a -k/-m filter that selects nothing) is reported, not failed.
set -uo pipefail
venv="${1:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$venv/bin/ruff" check ufuzz tests benchmarks || exit 1
"$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=15 "${@:2}"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests for this selection" >&2
  exit 0
fi
exit "$rc"
