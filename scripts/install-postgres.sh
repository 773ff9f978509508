#!/usr/bin/env bash
# Makes sure a PostgreSQL server is installed from Debian's `postgresql` package (tests and the local stack start
# their own clusters with scripts/lib/postgres-server.ts; nothing here starts or configures a server).
# A no-op when /usr/lib/postgresql/<major>/bin/initdb exists, so it is cheap to run before every test run.
# Prints one line saying what it did; apt's output goes to a log that is shown only when the install fails.
set -euo pipefail

say() { printf '[postgres] %s\n' "$*"; }

# The newest installed major version, or nothing. A glob, not a subprocess per candidate: the no-op path must stay fast.
installed() {
  local initdb newest="" major best=-1
  for initdb in /usr/lib/postgresql/*/bin/initdb; do
    [ -x "$initdb" ] || continue
    major="${initdb#/usr/lib/postgresql/}"
    major="${major%%/*}"
    if [[ "$major" =~ ^[0-9]+$ ]] && [ "$major" -gt "$best" ]; then
      best=$major
      newest="${initdb%/initdb}"
    fi
  done
  printf '%s' "$newest"
}

bin="$(installed)"
if [ -n "$bin" ]; then
  say "PostgreSQL present: $bin"
  exit 0
fi

command -v apt-get >/dev/null || {
  echo "PostgreSQL is not installed and apt-get is missing: install PostgreSQL and set PG_BIN to its bin directory" >&2
  exit 1
}
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "PostgreSQL is not installed: run this script as root (no sudo here)" >&2; exit 1; }
  sudo=(sudo)
fi

log="$(mktemp -t install-postgres.XXXXXX.log)"
trap 'rm -f "$log"' EXIT
apt_get() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >>"$log" 2>&1; }

start=$SECONDS
how="apt-get install"
# The package lists are refreshed only when the install fails with the ones this machine has (stale or absent lists).
if ! apt_get install -y postgresql; then
  how="apt-get update + install"
  if ! { apt_get update && apt_get install -y postgresql; }; then
    echo "[postgres] installing Debian's postgresql package failed; the end of apt's output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi

bin="$(installed)"
if [ -z "$bin" ]; then
  echo "[postgres] the postgresql package installed, but no /usr/lib/postgresql/*/bin/initdb appeared" >&2
  exit 1
fi
say "installed Debian's postgresql package ($how, $((SECONDS - start))s): $bin"
