#!/bin/sh
# Builds the Temporal Web UI server with PKCE on its sign-in (pkce.patch says why) into the file named by $1: the
# module's source from the Go module proxy (go mod download), copied, patched, built with CGO off. Used by
# scripts/install-temporal-ui.sh for the native stacks and by the Dockerfile's temporal-ui target for compose.
set -eu
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
module="github.com/temporalio/ui-server/v2@${TEMPORAL_UI_VERSION:-v2.42.1}"
dir="$(go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "go mod download found no source for $module" >&2; exit 1; }
work="$(mktemp -d)"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -R "$dir/." "$work/"
chmod -R u+w "$work"
(cd "$work" && GIT_CEILING_DIRECTORIES="$(dirname "$work")" git apply --whitespace=nowarn "$here/pkce.patch")
mkdir -p "$(dirname "$out")"
(cd "$work" && CGO_ENABLED=0 GOFLAGS='-buildvcs=false -trimpath' go build -o "$out" ./cmd/server)
