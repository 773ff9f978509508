#!/usr/bin/env bash
# Installs promtool (Prometheus's rule checker) into .tools/promtool (git-ignored), built with `go install` from the
# Go module proxy: test/observability/rules.test.ts runs `promtool check rules` and `promtool test rules` on
# deploy/observability with it. The version is pinned (Prometheus v3.x is module v0.3xx). A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/go-tool.sh"
install_go_tool promtool "${TEMPORAL_TOOLS_DIR:-$root/.tools}/promtool" promtool \
  "github.com/prometheus/prometheus/cmd/promtool@v0.316.0" promtool "up to 30 minutes on a cold Go cache"
