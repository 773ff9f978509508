#!/usr/bin/env bash
# Installs the standalone Temporal Web UI server (its assets are embedded in the binary) into .tools/temporal-ui
# (git-ignored), built with `go install` from the Go module proxy. The production-shaped stack runs it against the
# Temporal server with the codec server as its codec endpoint. A no-op when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="v2.42.1"
dir="$tools/temporal-ui"
stamp="$dir/.version"

say() { printf '[temporal-ui] %s\n' "$*"; }

if [ -x "$dir/bin/temporal-ui-server" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  say "Temporal UI server ${version} present"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build the Temporal UI server" >&2; exit 1; }
say "building the Temporal UI server ${version} with go install (about 1-3 minutes on a cold machine)..."
start=$SECONDS
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
GOBIN="$build" GOFLAGS=-buildvcs=false go install "github.com/temporalio/ui-server/v2/cmd/server@${version}"
mkdir -p "$dir/bin"
mv "$build/server" "$dir/bin/temporal-ui-server"
echo "$version" > "$stamp"
say "Temporal UI server ${version} ready in $((SECONDS - start))s"
