#!/usr/bin/env bash
# Installs the standalone Temporal Web UI server (its assets are embedded in the binary) into .tools/temporal-ui
# (git-ignored): the module's source from the Go module proxy with PKCE added to its sign-in
# (tools/temporal-ui/pkce.patch), built by tools/temporal-ui/build.sh, which the Dockerfile's temporal-ui target uses
# too. The production-shaped stack runs it against the Temporal server with the codec server as its codec endpoint.
# A no-op when present; a changed patch builds again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${TEMPORAL_TOOLS_DIR:-$root/.tools}/temporal-ui"
version="v2.42.1"
patch_sum="$(sha256sum "$root/tools/temporal-ui/pkce.patch" | cut -c1-12)"
stamp="$version+pkce.$patch_sum"
if [ -x "$dir/bin/temporal-ui-server" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$stamp" ]; then
  echo "[temporal-ui] $stamp present"
  exit 0
fi
# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" go git
# shellcheck source=scripts/lib/go-tool.sh
source "$root/scripts/lib/go-tool.sh"
use_go
echo "[temporal-ui] building the UI server $version with PKCE (about 1-3 minutes on a cold machine)..."
start=$SECONDS
TEMPORAL_UI_VERSION="$version" sh "$root/tools/temporal-ui/build.sh" "$dir/bin/temporal-ui-server.new"
mv "$dir/bin/temporal-ui-server.new" "$dir/bin/temporal-ui-server"
echo "$stamp" > "$dir/.version"
echo "[temporal-ui] $stamp ready in $((SECONDS - start))s"
