#!/usr/bin/env bash
# Installs the standalone Temporal Web UI server (its assets are embedded in the binary) into .tools/temporal-ui
# (git-ignored), built with `go install` from the Go module proxy. The production-shaped stack runs it against the
# Temporal server with the codec server as its codec endpoint. A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/go-tool.sh"
install_go_tool temporal-ui "${TEMPORAL_TOOLS_DIR:-$root/.tools}/temporal-ui" temporal-ui-server \
  "github.com/temporalio/ui-server/v2/cmd/server@v2.42.1" server "about 1-3 minutes"
