#!/usr/bin/env bash
# Makes sure a Chromium is installed from Debian's `chromium` package: the end-to-end sign-in test
# (test/production/sign-in.test.ts) and scripts/ui-screenshot.ts drive it headless through playwright-core, which
# downloads no browser of its own. A no-op when CHROMIUM_PATH or /usr/bin/chromium is there. apt's output goes to a
# log that is shown only when the install fails.
set -euo pipefail

say() { printf '[browser] %s\n' "$*"; }

for bin in "${CHROMIUM_PATH:-}" /usr/bin/chromium; do
  if [ -n "$bin" ] && [ -x "$bin" ]; then
    say "Chromium present: $bin"
    exit 0
  fi
done

command -v apt-get >/dev/null || { echo "Chromium is not installed and apt-get is missing: install it and set CHROMIUM_PATH" >&2; exit 1; }
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "Chromium is not installed: run this script as root (no sudo here)" >&2; exit 1; }
  sudo=(sudo)
fi
log="$(mktemp -t install-chromium.XXXXXX.log)"
trap 'rm -f "$log"' EXIT
apt_get() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >>"$log" 2>&1; }

start=$SECONDS
how="apt-get install"
if ! apt_get install -y chromium; then
  how="apt-get update + install"
  if ! { apt_get update && apt_get install -y chromium; }; then
    echo "[browser] installing Debian's chromium package failed; the end of apt's output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi
say "installed Debian's chromium package ($how, $((SECONDS - start))s): $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
