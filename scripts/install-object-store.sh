#!/usr/bin/env bash
# Installs MinIO, an S3-compatible object server, into .tools/minio (git-ignored), built with `go install` from the
# Go module proxy: the production-shaped stack keeps attachments in it, and the S3 attachment store is tested
# against it. The version is pinned (MinIO publishes pseudo-versions only). A no-op when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="v0.0.0-20260212201848-7aac2a2c5b7c"
dir="$tools/minio"
stamp="$dir/.version"

say() { printf '[object-store] %s\n' "$*"; }

if [ -x "$dir/bin/minio" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  say "MinIO ${version} present"
  exit 0
fi
command -v go >/dev/null || { echo "go is required to build MinIO" >&2; exit 1; }
say "building MinIO ${version} with go install (about 3-6 minutes on a cold machine)..."
start=$SECONDS
mkdir -p "$dir/bin"
GOBIN="$dir/bin" GOFLAGS=-buildvcs=false go install "github.com/minio/minio@${version}"
echo "$version" > "$stamp"
say "MinIO ready in $((SECONDS - start))s"
