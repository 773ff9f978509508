#!/usr/bin/env bash
# Everything the production-shaped stack (`npm run start:production`) runs, installed from the registries into
# .tools/ (git-ignored) or from Debian's packages; each step is a no-op when its part is present.
# scripts/check-prerequisites.sh checks what they need first (apt-get as root or through sudo, a Go, git, Java 17+
# and Maven) and names the command that installs each missing one, before anything is installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/check-prerequisites.sh
. "$here/check-prerequisites.sh" apt go git java maven
bash "$here/install-postgres.sh"
bash "$here/install-postgres-ha.sh"
bash "$here/install-temporal-server.sh"
bash "$here/install-temporal-ui.sh"
bash "$here/install-object-store.sh"
bash "$here/install-load-balancer.sh"
bash "$here/install-keycloak.sh"
