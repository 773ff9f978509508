#!/usr/bin/env bash
# Vendors Temporal's own Helm chart (charts/temporal of github.com/temporalio/helm-charts, MIT) at a pinned commit
# into deploy/helm/vendor/temporal, so that deploy/helm/temporal-values.yaml renders with no network: helm lint and
# helm template in test/deploy/temporal-helm.test.ts. Only what a render reads is copied (Chart.yaml, values.yaml,
# .helmignore, templates/) with the repository's LICENSE; the chart's own unit tests, CI values and example values are
# left out. The chart has no dependencies (its Cassandra, Elasticsearch, MySQL, PostgreSQL, Prometheus and Grafana
# subcharts went away in 1.0.0). deploy/helm/vendor/temporal.sha256 lists every vendored file's SHA-256, so a review
# sees any local change (the test checks the list).
#
#   bash scripts/vendor-temporal-chart.sh [<a clone or mirror of temporalio/helm-charts>]
#
# Without a clone it fetches the repository (git clone --bare --filter=blob:none) into a temporary folder. To move to
# another chart version, change `commit` and `tag` below, run this, and read the diff of deploy/helm/vendor.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Chart 1.1.1, the last whose server (appVersion) is of the 1.30 line: 1.30.3. The values pin 1.30.8, the version the
# native stack and docker-compose.yml run.
tag=temporal-1.1.1
commit=867a7bf40a17fd1cf91bc82b12f03164035e7e59
repository=https://github.com/temporalio/helm-charts

vendor="$root/deploy/helm/vendor"
dest="$vendor/temporal"
src="${1:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -z "$src" ]; then
  src="$tmp/helm-charts.git"
  git clone --quiet --bare --filter=blob:none "$repository" "$src"
fi
if ! git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "$src does not hold commit $commit ($tag) of $repository" >&2
  exit 1
fi
version="$(git -C "$src" show "$commit:charts/temporal/Chart.yaml" | sed -n 's/^version: *//p')"
app_version="$(git -C "$src" show "$commit:charts/temporal/Chart.yaml" | sed -n 's/^appVersion: *//p')"

mkdir -p "$tmp/out"
git -C "$src" archive "$commit" LICENSE charts/temporal/Chart.yaml charts/temporal/values.yaml \
  charts/temporal/.helmignore charts/temporal/templates | tar -x -C "$tmp/out"
rm -rf "$dest"
mkdir -p "$vendor"
mv "$tmp/out/charts/temporal" "$dest"
mv "$tmp/out/LICENSE" "$dest/LICENSE"

cat > "$dest/VENDORED.md" <<EOF
# Temporal's Helm chart, vendored

Chart \`temporal\` ${version} (server ${app_version}) from ${repository}, tag \`${tag}\`, commit
\`${commit}\`: the folder \`charts/temporal\` without its unit tests (\`tests/\`), CI values (\`ci/\`) and example values
(\`values/\`), and the repository's LICENSE (MIT). Copied by \`scripts/vendor-temporal-chart.sh\`, unchanged;
\`deploy/helm/vendor/temporal.sha256\` lists each file's SHA-256. The engine's values for it are
\`deploy/helm/temporal-values.yaml\` (docs/deploy.md, "Temporal on Kubernetes, beside the engine").
EOF

(cd "$vendor" && find temporal -type f ! -name VENDORED.md | LC_ALL=C sort | xargs sha256sum) > "$vendor/temporal.sha256"
echo "vendored temporal chart ${version} (${tag}, ${commit}) into deploy/helm/vendor/temporal"
