#!/usr/bin/env bash
# Installs the Temporal server itself (not the CLI's dev server) for the production-shaped stack and its tests, into
# .tools/ (git-ignored), from the Go module proxy only:
#   .tools/temporal-server/bin/temporal-server     go.temporal.io/server/cmd/server
#   .tools/temporal-server/bin/temporal-sql-tool   go.temporal.io/server/cmd/tools/sql (schema setup and updates)
#   .tools/temporal-server/schema/postgresql/v12   the versioned PostgreSQL schema files of the same module
# The version is the one the pinned CLI embeds, so the dev server and this server behave alike. A no-op when present.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="v1.29.1"
dir="$tools/temporal-server"
stamp="$dir/.version"

say() { printf '[temporal-server] %s\n' "$*"; }

if [ -x "$dir/bin/temporal-server" ] && [ -x "$dir/bin/temporal-sql-tool" ] && [ -d "$dir/schema/postgresql/v12" ] &&
  [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  say "Temporal server ${version} present"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the Temporal server" >&2; exit 1; }
say "building the Temporal server ${version} and its schema tool with go install (about 2-4 minutes on a cold machine)..."
start=$SECONDS
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
GOBIN="$build" GOFLAGS=-buildvcs=false go install "go.temporal.io/server/cmd/server@${version}"
GOBIN="$build" GOFLAGS=-buildvcs=false go install "go.temporal.io/server/cmd/tools/sql@${version}"

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
