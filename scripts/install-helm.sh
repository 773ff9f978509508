#!/usr/bin/env bash
# Installs Helm into .tools/helm (git-ignored), built with `go install` from the Go module proxy: the chart in
# deploy/helm is linted and rendered by it (test/deploy/helm.test.ts). The version is pinned. A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/go-tool.sh"
install_go_tool helm "${TEMPORAL_TOOLS_DIR:-$root/.tools}/helm" helm \
  "helm.sh/helm/v3/cmd/helm@v3.16.3" helm "about 2-4 minutes"
