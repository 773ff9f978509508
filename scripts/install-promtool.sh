#!/usr/bin/env bash
# Makes sure promtool (Prometheus's rule checker) is in .tools/promtool/bin (git-ignored): test/observability/rules.test.ts
# runs `promtool check rules` and `promtool test rules` on deploy/observability with it, and `npm run drill:deploy`
# evaluates the non-determinism alert with it. It comes from Debian's `prometheus` package (2.42 on bookworm), fetched
# with `apt-get download` and only its promtool taken out: installing the package would also install and start a
# Prometheus server (its init script and systemd unit listen on :9090), which nothing here wants. A static binary,
# seconds to fetch; a no-op when present. apt's output goes to a log that is shown only when the fetch fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${TEMPORAL_TOOLS_DIR:-$root/.tools}/promtool"
bin="$dir/bin/promtool"

say() { printf '[promtool] %s\n' "$*"; }
version() { "$1" --version 2>/dev/null | head -n 1; }

if [ -x "$bin" ] && [ -n "$(version "$bin")" ]; then
  say "promtool present: $bin ($(version "$bin"))"
  exit 0
fi

for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || {
    echo "[promtool] promtool is not installed and $tool is missing: put Prometheus's promtool at $bin" >&2
    exit 1
  }
done

work="$(mktemp -d -t install-promtool.XXXXXX)"
trap 'rm -rf "$work"' EXIT
log="$work/apt.log"
# apt-get download fetches as the invoking user into the current folder (no root needed); its `_apt` sandbox cannot
# write into a private temporary folder, so the folder is opened to it.
chmod 0755 "$work"
download() { (cd "$work" && apt-get -q download prometheus >>"$log" 2>&1); }
apt_update() {
  if [ "$(id -u)" -eq 0 ]; then
    env DEBIAN_FRONTEND=noninteractive apt-get -q update >>"$log" 2>&1
  elif command -v sudo >/dev/null; then
    sudo env DEBIAN_FRONTEND=noninteractive apt-get -q update >>"$log" 2>&1
  else
    echo "apt-get update needs root (no sudo here)" >>"$log"
    return 1
  fi
}

start=$SECONDS
how="apt-get download"
# The package lists are refreshed only when the download fails with the ones this machine has (stale or absent lists).
if ! download; then
  how="apt-get update + download"
  if ! { apt_update && download; }; then
    echo "[promtool] downloading Debian's prometheus package failed; the end of apt's output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi

deb="$(ls "$work"/prometheus_*.deb)"
mkdir -p "$dir/bin"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/promtool >"$work/promtool"
chmod 0755 "$work/promtool"
if [ -z "$(version "$work/promtool")" ]; then
  echo "[promtool] the promtool in $(basename "$deb") does not run here" >&2
  exit 1
fi
mv -f "$work/promtool" "$bin"
say "installed promtool from Debian's $(basename "$deb" .deb) ($how, $((SECONDS - start))s): $bin ($(version "$bin"))"
