#!/usr/bin/env bash
# Installs MinIO, an S3-compatible object server, into .tools/minio (git-ignored), built with `go install` from the
# Go module proxy: the production-shaped stack keeps attachments in it, and the S3 attachment store is tested
# against it. The version is pinned (MinIO publishes pseudo-versions only). A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/go-tool.sh"
install_go_tool object-store "${TEMPORAL_TOOLS_DIR:-$root/.tools}/minio" minio \
  "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c" minio "about 3-6 minutes"
