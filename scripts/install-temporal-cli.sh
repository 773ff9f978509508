#!/usr/bin/env bash
# Installs the Temporal CLI, whose dev server (with the Web UI) the local stack (`npm start`) and the tests run, into
# .tools/bin/temporal (git-ignored): v1.5.1's source from the Go module proxy with its embedded server at the
# production shapes' release, 1.30.8 (tools/temporal-cli/server.patch says why; later tags need a module the Go
# module proxy does not serve), built by tools/temporal-cli/build.sh with CGO off, so the binary has no libc
# dependency. A stamp file records what was built (a built binary reports 0.0.0-DEV as its version); a changed patch
# builds again. A no-op when present; a few minutes on a cold Go cache.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
cli_version="v1.5.1"
say() { printf '[tools] %s\n' "$*"; }

patch_sum="$(sha256sum "$root/tools/temporal-cli/server.patch" | cut -c1-12)"
cli_build="${cli_version}+server.${patch_sum}"
cli_stamp="$tools/bin/.temporal-cli-version"
if [ -x "$tools/bin/temporal" ] && [ "$(cat "$cli_stamp" 2>/dev/null)" = "$cli_build" ]; then
  say "temporal CLI ${cli_build} present"
  exit 0
fi
# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" go git
# shellcheck source=scripts/lib/go-tool.sh
source "$root/scripts/lib/go-tool.sh"
use_go
say "building the Temporal CLI ${cli_version} with its server at 1.30.8 (a few minutes on a cold machine)..."
start=$SECONDS
mkdir -p "$tools/bin"
TEMPORAL_CLI_VERSION="$cli_version" sh "$root/tools/temporal-cli/build.sh" "$tools/bin/temporal.new"
mv "$tools/bin/temporal.new" "$tools/bin/temporal"
echo "$cli_build" >"$cli_stamp"
say "temporal CLI built in $((SECONDS - start))s: $("$tools/bin/temporal" --version)"
