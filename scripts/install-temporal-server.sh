#!/usr/bin/env bash
# Installs the Temporal server itself (not the CLI's dev server) for the production-shaped stack and its tests, into
# .tools/ (git-ignored), from the Go module proxy only:
#   .tools/temporal-server/bin/temporal-server     go.temporal.io/server/cmd/server
#   .tools/temporal-server/bin/temporal-sql-tool   go.temporal.io/server/cmd/tools/sql (schema setup and updates)
#   .tools/temporal-server/schema/postgresql/v12   the versioned PostgreSQL schema files of the same module
# The version is outside the ranges of the server's published advisories. 1.29.1 was inside three: CVE-2025-14986 and
# CVE-2025-14987 (fixed in 1.29.2), CVE-2026-5199 (1.29.5, 1.30.3) and CVE-2026-5724 (1.29.6, 1.30.4); the module
# proxy serves no 1.29 release past 1.29.2. So the newest of the 1.30 line that `go install` builds with Go 1.26.8
# (1.30.9 asks for Go 1.26.10): one minor after 1.29, as Temporal upgrades a cluster, whose schema the stack's next
# start brings up with the schema tool of the same version (update-schema). Docker images: temporalio/server and
# temporalio/admin-tools of the same version. The Go it is built with is the one scripts/lib/go-tool.sh chooses. A
# no-op when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="v1.30.8"
dir="$tools/temporal-server"
stamp="$dir/.version"

say() { printf '[temporal-server] %s\n' "$*"; }

if [ -x "$dir/bin/temporal-server" ] && [ -x "$dir/bin/temporal-sql-tool" ] && [ -d "$dir/schema/postgresql/v12" ] &&
  [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  say "Temporal server ${version} present"
  exit 0
fi

# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" go
# shellcheck source=scripts/lib/go-tool.sh
source "$root/scripts/lib/go-tool.sh"
use_go
say "building the Temporal server ${version} and its schema tool with go install (about 1 minute after the Temporal CLI, whose compiled packages it shares; 2-4 minutes alone on a cold machine)..."
start=$SECONDS
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
GOBIN="$build" go install "go.temporal.io/server/cmd/server@${version}"
GOBIN="$build" go install "go.temporal.io/server/cmd/tools/sql@${version}"

# The schema files ship in the module's source: copied, so the tools folder does not depend on the module cache.
module_dir="$(go mod download -json "go.temporal.io/server@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$module_dir/schema/postgresql/v12" ] || { echo "no PostgreSQL schema in $module_dir" >&2; exit 1; }

rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/schema/postgresql"
mv "$build/server" "$dir/bin/temporal-server"
mv "$build/sql" "$dir/bin/temporal-sql-tool"
cp -R "$module_dir/schema/postgresql/v12" "$dir/schema/postgresql/v12"
chmod -R u+w "$dir/schema"
echo "$version" > "$stamp"
say "Temporal server ${version} ready in $((SECONDS - start))s"
