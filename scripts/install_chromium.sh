#!/usr/bin/env bash
# Best effort: Debian's headless-capable Chromium for tests/reports/test_html_report.py, which opens the HTML
# report in a real browser. Never fails the run: when chromium cannot be had (not root, no apt-get, no package
# registry) it says so and those tests skip, saying how to get it.
#   UFUZZ_INSTALL_CHROMIUM=0   skip this step
set -uo pipefail

if [ "${UFUZZ_INSTALL_CHROMIUM:-1}" = "0" ]; then
  exit 0
fi

found() {
  local b
  for b in "${UFUZZ_CHROMIUM:-}" chromium chromium-browser; do
    if [ -n "$b" ] && command -v "$b" >/dev/null 2>&1; then
      command -v "$b"
      return 0
    fi
  done
  return 1
}

if bin="$(found)"; then
  echo "install_chromium: $bin"
  exit 0
fi
skip() {
  echo "install_chromium: $1; the HTML report's browser tests will skip" >&2
  echo "  (to run them: apt-get install -y --no-install-recommends chromium)" >&2
  exit 0
}
[ "$(id -u)" = "0" ] || skip "no chromium and not root, so not installing it"
command -v apt-get >/dev/null 2>&1 || skip "no chromium and no apt-get"

export DEBIAN_FRONTEND=noninteractive
log=/tmp/ufuzz-apt-chromium.log
apt_install() {
  apt-get -o DPkg::Lock::Timeout=120 install -y -q --no-install-recommends chromium >"$log" 2>&1
}
start=$SECONDS
echo "install_chromium: apt-get install -y --no-install-recommends chromium ..."
if ! apt_install; then
  # a fresh machine may have no package lists yet
  apt-get -o DPkg::Lock::Timeout=120 update -q >>"$log" 2>&1 && apt_install
fi
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 5 "$log" >&2
  skip "apt-get failed (exit $rc, log $log) after $((SECONDS - start)) s"
fi
if bin="$(found)"; then
  echo "install_chromium: installed in $((SECONDS - start)) s: $bin"
else
  skip "apt-get installed chromium but no chromium binary was found afterwards"
fi
