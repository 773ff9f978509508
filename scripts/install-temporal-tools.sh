#!/usr/bin/env bash
# Installs the Temporal servers the tests run against into .tools/ (git-ignored), from package registries only, after
# checking what they need (scripts/check-prerequisites.sh):
#   .tools/bin/temporal              the Temporal CLI (dev server with the Web UI)   install-temporal-cli.sh (go build)
#   .tools/bin/temporal-test-server  the time-skipping test server (Java)            install-test-server.sh (Maven)
# The local stack (`npm start`) needs the CLI alone and runs install-temporal-cli.sh. Each part is skipped when it is
# already there, so a second run is a no-op.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/check-prerequisites.sh
. "$here/check-prerequisites.sh" go git java maven
bash "$here/install-temporal-cli.sh"
bash "$here/install-test-server.sh"
