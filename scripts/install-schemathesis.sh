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

# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" python venv
start=$SECONDS
# shellcheck source=scripts/lib/python-venv.sh
source "$root/scripts/lib/python-venv.sh"
make_venv "$dir" schemathesis
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version"
installed || {
  echo "[schemathesis] $bin does not run after the install" >&2
  exit 1
}
say "installed Schemathesis $version with pip ($((SECONDS - start))s): $bin"
