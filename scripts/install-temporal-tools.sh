#!/usr/bin/env bash
# Installs the Temporal servers this project runs against into .tools/ (git-ignored), from package registries only:
#   .tools/bin/temporal            the Temporal CLI (dev server with the Web UI), built with `go install`
#   .tools/bin/temporal-test-server the time-skipping test server (Java, from Maven Central), a wrapper that execs java
# Each part is skipped when it is already there, so a second run is a no-op.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
cli_version="v1.5.1"
mkdir -p "$tools/bin"

say() { printf '[tools] %s\n' "$*"; }

# --- Temporal CLI -----------------------------------------------------------------------------------------------
# Later tags carry a `replace` directive in go.mod, which `go install pkg@version` refuses; v1.5.1 is the newest
# that installs this way. CGO is off so the binary has no libc dependency.
# A go-installed binary reports 0.0.0-DEV as its version, so a stamp file records which tag was built.
cli_stamp="$tools/bin/.temporal-cli-version"
if [ -x "$tools/bin/temporal" ] && [ "$(cat "$cli_stamp" 2>/dev/null)" = "$cli_version" ]; then
  say "temporal CLI ${cli_version} present"
else
  command -v go >/dev/null || { echo "go is required to build the Temporal CLI (apt-get install golang, or see README)" >&2; exit 1; }
  say "building the Temporal CLI ${cli_version} with go install (a few minutes on a cold machine)..."
  start=$SECONDS
  CGO_ENABLED=0 GOBIN="$tools/bin" GOFLAGS=-buildvcs=false go install "github.com/temporalio/cli/cmd/temporal@${cli_version}"
  echo "$cli_version" > "$cli_stamp"
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
  command -v mvn >/dev/null || { echo "mvn is required to fetch the test server (apt-get install maven)" >&2; exit 1; }
  command -v java >/dev/null || { echo "java (17+) is required to run the test server" >&2; exit 1; }
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
