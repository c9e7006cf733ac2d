#!/usr/bin/env bash
# Nightly regression fuzzing of a memory product: the "nightly CI" recipe of docs/ci.md. The GitHub Actions and GitLab
# jobs beside this file run it; so does tests/cli/test_nightly_ci.py, against a local product with a planted bug.
#
#   1. `ufuzz corpus check` replays the committed baseline corpus of known failures: each one still fails (known),
#      no longer fails (fixed: good news), or fails differently / fails again after a fix (a regression);
#   2. `ufuzz run --baseline --match-baseline` runs the baseline's own campaign again (its seed, budget, strategy,
#      k and batch, read from the corpus header) for a bounded time and matches what it finds with the baseline by
#      behaviour (docs/ci.md): a known bug met on another fact, wording or seed is known, so an unchanged product
#      stays green; a new behaviour, a known one met far more often, or a fixed one back fails the night;
#   3. `ufuzz report` writes one self-contained HTML file to keep as an artefact.
#
# Environment (all optional):
#   UFUZZ            the ufuzz command (default: ufuzz)
#   UFUZZ_CORPUS     the committed baseline corpus (default: ci/ufuzz-baseline.jsonl)
#   UFUZZ_CONFIG     the product TOML of --backend http (default: ci/product.toml)
#   UFUZZ_BASE_URL   the product's URL when it differs from the TOML's (e.g. a service container)
#   UFUZZ_BUDGET     executions of the fresh campaign (default: the baseline campaign's budget)
#   UFUZZ_SEED       its random seed (default: the baseline campaign's seed); another seed or budget explores
#                    differently: known bugs stay known, and a behaviour the baseline lacks fails the night only
#                    once met more often than the baseline's campaign could have missed by chance
#   UFUZZ_MAX_TIME   its time limit (default: 20m)
#   UFUZZ_OUT        where the JUnit files (corpus-check.xml, campaign.xml), JSON reports, campaign and HTML
#                    report go (default: ufuzz-out)
#
# Exit status: 0 nothing regressed and nothing new, 1 a known failure regressed or changed, or the campaign found
# a new, worse or regressed behaviour, 2 bad usage (a malformed corpus, an unknown option), 3 the product is unreachable,
# 70 ufuzz itself failed (a bug of ufuzz's: report it with $UFUZZ_OUT/campaign/campaign.log).
set -uo pipefail

read -r -a ufuzz <<< "${UFUZZ:-ufuzz}"
corpus="${UFUZZ_CORPUS:-ci/ufuzz-baseline.jsonl}"
out="${UFUZZ_OUT:-ufuzz-out}"
opts=(--config "${UFUZZ_CONFIG:-ci/product.toml}")
if [ -n "${UFUZZ_BASE_URL:-}" ]; then opts+=(--opt "base_url=$UFUZZ_BASE_URL"); fi
mkdir -p "$out"

echo "== known failures: ufuzz corpus check $corpus"
"${ufuzz[@]}" corpus check "$corpus" "${opts[@]}" --changed-only \
  --junit "$out/corpus-check.xml" --json "$out/corpus-check.json"
check=$?
case $check in
  2|3) exit $check ;;  # a bad corpus or a product that is down: nothing else to learn tonight
esac

echo "== fresh campaign against the baseline"
same=(--match-baseline)
if [ -n "${UFUZZ_BUDGET:-}" ]; then same+=(--budget "$UFUZZ_BUDGET"); fi
if [ -n "${UFUZZ_SEED:-}" ]; then same+=(--seed "$UFUZZ_SEED"); fi
"${ufuzz[@]}" run --backend http "${opts[@]}" "${same[@]}" --max-time "${UFUZZ_MAX_TIME:-20m}" \
  --out "$out/campaign" --force --baseline "$corpus" --fail-on new --junit "$out/campaign.xml"
run=$?
case $run in
  4|5) run=0 ;;  # the campaign ran out of things to try (4) or of time (5) before its budget: a normal night
esac
"${ufuzz[@]}" failures list "$out/campaign" --by cause > "$out/causes.txt" || true
"${ufuzz[@]}" report "$out/campaign" -o "$out/report.html" || true

if [ $run -eq 3 ] || [ $run -eq 70 ] || [ $run -eq 130 ]; then exit $run; fi  # could not run, failed, or stopped
if [ $check -ne 0 ] || [ $run -ne 0 ]; then
  echo "== ufuzz: regression (corpus check exit $check, campaign exit $run); see $out/corpus-check.xml, $out/campaign.xml and $out/report.html"
  exit 1
fi
echo "== ufuzz: nothing regressed, nothing new"
