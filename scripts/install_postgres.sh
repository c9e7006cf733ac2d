#!/usr/bin/env bash
# Best effort: PostgreSQL's server binaries (initdb, postgres) for tests/corpus/test_corpus_postgres.py, which starts
# a throwaway server of its own (tests/support/pg_server.py). Never fails the run: when the binaries cannot be had
# (not root, no apt-get, no package registry) it says so and those tests skip, saying how to get them.
#   UFUZZ_INSTALL_POSTGRES=0   skip this step
set -uo pipefail

if [ "${UFUZZ_INSTALL_POSTGRES:-1}" = "0" ]; then
  exit 0
fi

bindir() {
  local d
  d="$(command -v initdb 2>/dev/null)"
  if [ -n "$d" ] && [ -x "$(dirname "$(readlink -f "$d")")/postgres" ]; then
    dirname "$(readlink -f "$d")"
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

if found="$(bindir)"; then
  echo "install_postgres: server binaries in $found"
  exit 0
fi
skip() {
  echo "install_postgres: $1; tests/corpus/test_corpus_postgres.py will skip" >&2
  echo "  (to run them: apt-get install -y --no-install-recommends postgresql)" >&2
  exit 0
}
[ "$(id -u)" = "0" ] || skip "no PostgreSQL server binaries and not root, so not installing them"
command -v apt-get >/dev/null 2>&1 || skip "no PostgreSQL server binaries and no apt-get"

export DEBIAN_FRONTEND=noninteractive
apt_install() {
  apt-get -o DPkg::Lock::Timeout=120 install -y -q --no-install-recommends postgresql >/tmp/ufuzz-apt-postgres.log 2>&1
}
start=$SECONDS
echo "install_postgres: apt-get install -y --no-install-recommends postgresql ..."
if ! apt_install; then
  # a fresh machine may have no package lists yet
  apt-get -o DPkg::Lock::Timeout=120 update -q >>/tmp/ufuzz-apt-postgres.log 2>&1 && apt_install
fi
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 5 /tmp/ufuzz-apt-postgres.log >&2
  skip "apt-get failed (exit $rc, log /tmp/ufuzz-apt-postgres.log) after $((SECONDS - start)) s"
fi
if found="$(bindir)"; then
  echo "install_postgres: installed in $((SECONDS - start)) s; server binaries in $found"
else
  skip "apt-get installed postgresql but no initdb/postgres were found afterwards"
fi
