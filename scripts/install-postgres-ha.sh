#!/usr/bin/env bash
# Makes sure the parts of the highly available PostgreSQL cluster are installed from Debian's packages (the cluster
# is started by scripts/lib/stack/postgres-cluster.ts; nothing here starts or configures a server):
#   patroni      the cluster's manager: one per PostgreSQL node, elects the primary, fails over, rewinds the old one
#   etcd-server  the store Patroni holds the leader's lease in (three members: one per node and a witness)
#   pgbackrest   full backups and the continuous WAL archive, into the S3 object store; point-in-time restores
# PostgreSQL itself comes from scripts/install-postgres.sh (run first). A no-op when the three binaries are there, so it
# is cheap to run before every test run. Debian starts a package's service at install where it can (etcd on 2379,
# Patroni without a configuration): the install runs with service starts refused (policy-rc.d) unless the machine
# already has its own policy, so nothing listens after it. Prints one line saying what it did; apt's output goes to a
# log that is shown only when the install fails.
set -euo pipefail

say() { printf '[postgres-ha] %s\n' "$*"; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/install-postgres.sh"

missing=()
command -v patroni >/dev/null || [ -x /usr/bin/patroni ] || missing+=(patroni)
command -v etcd >/dev/null || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
command -v pgbackrest >/dev/null || [ -x /usr/bin/pgbackrest ] || missing+=(pgbackrest)
if [ "${#missing[@]}" -eq 0 ]; then
  say "Patroni, etcd and pgBackRest present"
  exit 0
fi

command -v apt-get >/dev/null || {
  echo "[postgres-ha] ${missing[*]} missing and apt-get is missing: install Patroni, etcd and pgBackRest" >&2
  exit 1
}
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "[postgres-ha] ${missing[*]} missing: run this script as root (no sudo here)" >&2; exit 1; }
  sudo=(sudo)
fi

log="$(mktemp -t install-postgres-ha.XXXXXX.log)"
policy=/usr/sbin/policy-rc.d
made_policy=""
cleanup() {
  rm -f "$log"
  if [ -n "$made_policy" ]; then "${sudo[@]}" rm -f "$policy"; fi
}
trap cleanup EXIT
# No service started by the install: a policy that refuses every start, for the install's time, where none is set.
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 0755 "$policy"
  made_policy=1
fi
apt_get() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >>"$log" 2>&1; }

start=$SECONDS
how="apt-get install"
# The package lists are refreshed only when the install fails with the ones this machine has (stale or absent lists).
if ! apt_get install -y "${missing[@]}"; then
  how="apt-get update + install"
  if ! { apt_get update && apt_get install -y "${missing[@]}"; }; then
    echo "[postgres-ha] installing Debian's ${missing[*]} failed; the end of apt's output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi
# The packages' own services (a system-wide etcd, Patroni from /etc/patroni) stay off at boot too: the cluster's
# processes are the stack's.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  for unit in etcd.service patroni.service; do
    "${sudo[@]}" systemctl disable --now "$unit" >>"$log" 2>&1 || true
  done
fi
for bin in patroni etcd pgbackrest; do
  command -v "$bin" >/dev/null || { echo "[postgres-ha] the packages installed, but $bin is not on the PATH" >&2; exit 1; }
done
say "installed Debian's ${missing[*]} ($how, $((SECONDS - start))s): $(patroni --version), etcd $(etcd --version | sed -n 's/^etcd Version: //p'), $(pgbackrest version)"
