#!/usr/bin/env bash
# Makes sure HAProxy is installed from Debian's `haproxy` package: the production-shaped stack puts it in front of its
# API replicas. A no-op when `haproxy` is on the PATH (or HAPROXY_BIN names it). apt's output goes to a log that is
# shown only when the install fails.
set -euo pipefail

say() { printf '[load-balancer] %s\n' "$*"; }

if [ -n "${HAPROXY_BIN:-}" ] && [ -x "$HAPROXY_BIN" ]; then
  say "HAProxy present: $HAPROXY_BIN"
  exit 0
fi
if bin="$(command -v haproxy || true)" && [ -n "$bin" ]; then
  say "HAProxy present: $bin"
  exit 0
fi
if [ -x /usr/sbin/haproxy ]; then
  say "HAProxy present: /usr/sbin/haproxy"
  exit 0
fi

command -v apt-get >/dev/null || { echo "HAProxy is not installed and apt-get is missing: install it and set HAPROXY_BIN" >&2; exit 1; }
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "HAProxy is not installed: run this script as root (no sudo here)" >&2; exit 1; }
  sudo=(sudo)
fi
log="$(mktemp -t install-haproxy.XXXXXX.log)"
trap 'rm -f "$log"' EXIT
apt_get() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >>"$log" 2>&1; }

start=$SECONDS
how="apt-get install"
if ! apt_get install -y haproxy; then
  how="apt-get update + install"
  if ! { apt_get update && apt_get install -y haproxy; }; then
    echo "[load-balancer] installing Debian's haproxy package failed; the end of apt's output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi
say "installed Debian's haproxy package ($how, $((SECONDS - start))s): $(command -v haproxy || echo /usr/sbin/haproxy)"
