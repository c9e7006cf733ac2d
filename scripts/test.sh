#!/usr/bin/env bash
# Runs ruff and the test suite in the given virtualenv. Extra arguments go to pytest.
# The tests run in UFUZZ_TEST_WORKERS processes (pytest-xdist; default 2, the CI machine's cores; 0 runs them
# in this process): each test owns its temp dirs, ports and servers, so they share nothing.
# pytest's exit 5 ("no tests collected", e.g. a -k/-m filter that selects nothing) is reported, not failed.
set -uo pipefail
venv="${1:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$venv/bin/ruff" check ufuzz tests benchmarks || exit 1
"$venv/bin/python" -m pytest -q -p no:cacheprovider -n "${UFUZZ_TEST_WORKERS:-2}" --durations=15 "${@:2}"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests for this selection" >&2
  exit 0
fi
exit "$rc"
