#!/usr/bin/env bash
# Installs the Temporal servers this project runs against into .tools/ (git-ignored), from package registries only:
#   .tools/bin/temporal            the Temporal CLI (dev server with the Web UI), built from its source with `go build`
#   .tools/bin/temporal-test-server the time-skipping test server (Java, from Maven Central), a wrapper that execs java
# Each part is skipped when it is already there, so a second run is a no-op. What they need is checked first
# (scripts/check-prerequisites.sh), and the CLI is built with the Go that scripts/lib/go-tool.sh chooses.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
cli_version="v1.5.1"
mkdir -p "$tools/bin"
# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" go git java maven

say() { printf '[tools] %s\n' "$*"; }

# --- Temporal CLI -----------------------------------------------------------------------------------------------
# v1.5.1's source with its embedded server (the dev server) at the production shapes' release, 1.30.8
# (tools/temporal-cli/server.patch says why; later tags need a module the Go module proxy does not serve), built by
# tools/temporal-cli/build.sh with CGO off, so the binary has no libc dependency. A stamp file records what was built
# (a built binary reports 0.0.0-DEV as its version); a changed patch builds again.
patch_sum="$(sha256sum "$root/tools/temporal-cli/server.patch" | cut -c1-12)"
cli_build="${cli_version}+server.${patch_sum}"
cli_stamp="$tools/bin/.temporal-cli-version"
if [ -x "$tools/bin/temporal" ] && [ "$(cat "$cli_stamp" 2>/dev/null)" = "$cli_build" ]; then
  say "temporal CLI ${cli_build} present"
else
  # shellcheck source=scripts/lib/go-tool.sh
  source "$root/scripts/lib/go-tool.sh"
  use_go
  say "building the Temporal CLI ${cli_version} with its server at 1.30.8 (a few minutes on a cold machine)..."
  start=$SECONDS
  TEMPORAL_CLI_VERSION="$cli_version" sh "$root/tools/temporal-cli/build.sh" "$tools/bin/temporal.new"
  mv "$tools/bin/temporal.new" "$tools/bin/temporal"
  echo "$cli_build" > "$cli_stamp"
  say "temporal CLI built in $((SECONDS - start))s: $("$tools/bin/temporal" --version)"
fi

# --- time-skipping test server ----------------------------------------------------------------------------------
ts_dir="$tools/test-server"
pom="$root/tools/test-server/pom.xml"
stamp="$ts_dir/pom.sha256"
want="$(sha256sum "$pom" | cut -d' ' -f1)"
if [ -x "$tools/bin/temporal-test-server" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  say "time-skipping test server present"
else
  say "fetching the time-skipping test server and its classpath with Maven..."
  start=$SECONDS
  rm -rf "$ts_dir/lib"
  mkdir -p "$ts_dir/lib"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$ts_dir/lib" -DincludeScope=runtime
  cat > "$tools/bin/temporal-test-server" <<WRAP
#!/usr/bin/env bash
# Temporal's time-skipping test server. Usage: temporal-test-server <port>
# exec, so the process the SDK starts (and later kills) is java itself.
exec java \${TEMPORAL_TEST_SERVER_JAVA_OPTS:--Xms64m -Xmx512m -XX:+UseSerialGC} -cp "$ts_dir/lib/*" io.temporal.testserver.TestServer "\$@"
WRAP
  chmod +x "$tools/bin/temporal-test-server"
  echo "$want" > "$stamp"
  say "test server ready in $((SECONDS - start))s ($(ls "$ts_dir/lib" | wc -l) jars)"
fi
