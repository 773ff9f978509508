#!/bin/sh
# Builds the Temporal CLI with the server release server.patch names (it says why) into the file named by $1: the
# CLI's source from the Go module proxy (go mod download), copied, patched, built with CGO off.
set -eu
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
module="github.com/temporalio/cli@${TEMPORAL_CLI_VERSION:-v1.5.1}"
dir="$(go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "go mod download found no source for $module" >&2; exit 1; }
work="$(mktemp -d)"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -R "$dir/." "$work/"
chmod -R u+w "$work"
(cd "$work" && GIT_CEILING_DIRECTORIES="$(dirname "$work")" git apply --whitespace=nowarn "$here/server.patch")
mkdir -p "$(dirname "$out")"
(cd "$work" && CGO_ENABLED=0 GOFLAGS='-buildvcs=false -trimpath' go build -o "$out" ./cmd/temporal)
