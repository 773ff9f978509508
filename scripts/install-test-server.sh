#!/usr/bin/env bash
# Installs Temporal's time-skipping test server (Java, from Maven Central: tools/test-server/pom.xml), which the
# workflow tests run, into .tools/test-server (git-ignored), with .tools/bin/temporal-test-server, a wrapper that execs
# java. The tests' installers run it; the local stack does not use it. A no-op when present.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${TEMPORAL_TOOLS_DIR:-$root/.tools}"
say() { printf '[tools] %s\n' "$*"; }

ts_dir="$tools/test-server"
pom="$root/tools/test-server/pom.xml"
stamp="$ts_dir/pom.sha256"
want="$(sha256sum "$pom" | cut -d' ' -f1)"
if [ -x "$tools/bin/temporal-test-server" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  say "time-skipping test server present"
  exit 0
fi
# shellcheck source=scripts/check-prerequisites.sh
. "$root/scripts/check-prerequisites.sh" java maven
say "fetching the time-skipping test server and its classpath with Maven..."
start=$SECONDS
rm -rf "${ts_dir:?}/lib"
mkdir -p "$ts_dir/lib" "$tools/bin"
mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$ts_dir/lib" -DincludeScope=runtime
cat >"$tools/bin/temporal-test-server" <<WRAP
#!/usr/bin/env bash
# Temporal's time-skipping test server. Usage: temporal-test-server <port>
# exec, so the process the SDK starts (and later kills) is java itself.
exec java \${TEMPORAL_TEST_SERVER_JAVA_OPTS:--Xms64m -Xmx512m -XX:+UseSerialGC} -cp "$ts_dir/lib/*" io.temporal.testserver.TestServer "\$@"
WRAP
chmod +x "$tools/bin/temporal-test-server"
echo "$want" >"$stamp"
say "test server ready in $((SECONDS - start))s ($(ls "$ts_dir/lib" | wc -l) jars)"
