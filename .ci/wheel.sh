#!/usr/bin/env bash
# What a wheel user gets: build the wheel, install it into a fresh venv outside the checkout, and from a
# directory that is not the checkout run README.md's first command on inputs the installed package
# generates (compared with the repository's copies), then `batkube controlplane build --help`.
# No `batsim` on that PATH: `batkube run` falls back to the packaged Batsim double.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m pip wheel -q --no-deps -w "$work/dist" "$repo"
"$PY" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/dist/batkube_py-*.whl
cd "$work"
export PATH="$work/venv/bin:/usr/bin:/bin"
mkdir platforms workloads
batkube platform --nodes 16 --cores 1 --memory 4Gi -o platforms/cluster_16x1core.xml
batkube workload burst --jobs 200 --delay 170 --cpu 1 -o workloads/burst_200_delay170.json
cmp platforms/cluster_16x1core.xml "$repo/platforms/cluster_16x1core.xml"
cmp workloads/burst_200_delay170.json "$repo/workloads/burst_200_delay170.json"
batkube run -p platforms/cluster_16x1core.xml -w workloads/burst_200_delay170.json -o runs/burst \
  | tee run.txt
grep -q '^makespan=2210.33 mean_waiting_time=979.353 ' run.txt
test -s runs/burst/pods.csv
batkube controlplane build --help > help.txt
grep -q 'kube-scheduler' help.txt
BATKUBE_CACHE="$work/cache" python -c "from batkube_py.controlplane import build; build.sources()"  # Go sources in the wheel
echo "wheel: installed outside the checkout, README's first command and controlplane build --help work"
