#!/usr/bin/env bash
# Installs Node.js 24 LTS into .tools/node (git-ignored) from the npm registry alone: the package node-linux-<arch>
# holds the official binary (bin/node; npm itself stays the machine's). A no-op when that version is present.
#   scripts/install-node.sh [VERSION [DIR]]   another release (CI also tests the lowest supported one) and folder
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="${1:-24.21.0}"
dir="${2:-$tools/node}"
say() { printf '[node] %s\n' "$*"; }

case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "no Node.js package for $(uname -m) on the npm registry; install Node.js $version by hand" >&2; exit 1 ;;
esac

if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$version" ]; then
  say "v$version present"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is required to fetch Node.js $version from the registry" >&2; exit 1; }
say "fetching node-linux-$arch@$version from the npm registry (about 50 MB)..."
start=$SECONDS
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
tar -xzf "$work"/node-linux-*.tgz -C "$work" package/bin/node package/LICENSE
rm -rf "$dir"
mkdir -p "$dir/bin"
mv "$work/package/bin/node" "$dir/bin/node"
mv "$work/package/LICENSE" "$dir/LICENSE"
say "$("$dir/bin/node" --version) ready in $((SECONDS - start))s: $dir/bin/node"
