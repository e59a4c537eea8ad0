#!/usr/bin/env bash
# The monitoring picture in docs/operate/monitoring.md, from a real run: a controller on the
# local control plane is scraped every second through report-only, enforce and a KFP release it
# does not serve (tests/src/bin/fleet_scrape.rs); the dashboard's own queries are evaluated over
# the recording by Prometheus' PromQL engine and TSDB (promql-eval, built from its Go module by
# tests/control-plane/build.sh); matplotlib (from PyPI, in a venv this script creates under
# .cache/) plots them.
#
#   tests/picture/run.sh [OUT.png]     (default docs/operate/monitoring-fleet.png)
#
# PIPEWARDEN_PICTURE_PHASE_SECONDS (default 40) sets each phase's length. Needs the control plane
# and the default policy (`make control-plane policies`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/docs/operate/monitoring-fleet.png}"
bin="${PIPEWARDEN_CONTROL_PLANE_CACHE:-$repo/.cache/bin}"
venv="$repo/.cache/picture-venv"
MATPLOTLIB_VERSION=3.10.7
panels='SWFs by state|Exit completions by state|SWF decisions|Exit notifications'

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "picture: promql-eval"
"$repo/tests/control-plane/build.sh" --only promql-eval
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import matplotlib; assert matplotlib.__version__ == '$MATPLOTLIB_VERSION'" 2>/dev/null; then
  echo "picture: matplotlib $MATPLOTLIB_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "matplotlib==$MATPLOTLIB_VERSION"
fi
echo "picture: recording a run (3 phases)"
(cd "$repo" && cargo run -q -p pipewarden-tests --bin fleet_scrape -- "$work/scrapes.txt")
echo "picture: the dashboard's queries over it"
"$bin/promql-eval" -scrapes "$work/scrapes.txt" \
  -dashboard "$repo/deploy/components/monitoring/dashboard.json" -panels "$panels" >"$work/series.json"
"$venv/bin/python" "$here/plot.py" "$work/series.json" "$work/scrapes.txt" "$out" "$panels"
