#!/usr/bin/env bash
# Installs Keycloak (the production-shaped stack's OpenID Connect provider) into .tools/keycloak (git-ignored): the
# distribution's tarball from Maven Central (org.keycloak:keycloak-quarkus-dist) through Maven, unpacked, then built
# once for PostgreSQL (`kc.sh build --db=postgres`), so that each start is `kc.sh start --optimized` and every stack
# keeps its realm in its own PostgreSQL. Runs on Java 17. A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
version="26.4.7"
dir="$tools/keycloak"
stamp="$dir/.version"
# The build options: a change here is a new build (the stamp holds both).
build_options="--db=postgres --health-enabled=true --http-relative-path=/"
want="$version $build_options"

say() { printf '[keycloak] %s\n' "$*"; }

if [ -x "$dir/bin/kc.sh" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  say "$version present"
  exit 0
fi
# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" java maven
start=$SECONDS
say "fetching keycloak-quarkus-dist $version with Maven (about 160 MB)..."
download="$(mktemp -d)"
trap 'rm -rf "$download"' EXIT
mvn -q -B -Dstyle.color=never dependency:copy \
  -Dartifact="org.keycloak:keycloak-quarkus-dist:${version}:tar.gz" -DoutputDirectory="$download"
rm -rf "$dir"
mkdir -p "$dir"
tar -xzf "$download/keycloak-quarkus-dist-${version}.tar.gz" -C "$dir" --strip-components=1
say "building it for PostgreSQL (kc.sh build)..."
# shellcheck disable=SC2086
"$dir/bin/kc.sh" build $build_options >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; exit 1; }
echo "$want" > "$stamp"
say "$version ready in $((SECONDS - start))s"
