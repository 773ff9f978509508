#!/usr/bin/env bash
# Installs Schemathesis, the OpenAPI-driven property-based fuzzer of the clinic API's contract test
# (test/openapi/contract-fuzz.test.ts, npm run fuzz:api), into a Python virtual environment in .tools/schemathesis
# (git-ignored), with pip from PyPI. The version is pinned. Needs Python 3.10 or newer with its venv module (Debian:
# python3-venv, installed through apt-get when missing). A no-op when present; seconds to a minute otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="4.32.5"
dir="${TEMPORAL_TOOLS_DIR:-$root/.tools}/schemathesis"
bin="$dir/bin/st"

say() { printf '[schemathesis] %s\n' "$*"; }
installed() { "$bin" --version 2>/dev/null | grep -q "version $version\$"; }

if [ -x "$bin" ] && installed; then
  say "Schemathesis present: $bin ($version)"
  exit 0
fi

python="$(command -v python3 || true)"
if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "[schemathesis] Python 3.10 or newer (python3) is needed to install Schemathesis" >&2
  exit 1
fi

start=$SECONDS
rm -rf "$dir"
if ! "$python" -m venv "$dir" 2>/dev/null; then
  # Debian's python3 keeps venv (and ensurepip) in a package of its own.
  say "installing python3-venv (Debian's package) for Python's venv module"
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q install -y python3-venv >/dev/null
  rm -rf "$dir"
  "$python" -m venv "$dir"
fi
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version"
installed || {
  echo "[schemathesis] $bin does not run after the install" >&2
  exit 1
}
say "installed Schemathesis $version with pip ($((SECONDS - start))s): $bin"
