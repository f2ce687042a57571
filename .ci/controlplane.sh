#!/usr/bin/env bash
# Builds (first time) or finds in the cache the pinned etcd / kube-apiserver / kube-scheduler that the
# real-backend tests (tests/test_apiserver*.py, tests/test_controlplane*.py) need: `batkube controlplane
# build`, plus the system packages it needs. Idempotent: a second run is a no-op. Cache:
# ${BATKUBE_CACHE:-$HOME/.cache/batkube-py} (Go module + build cache + binaries). Fails loudly if it
# cannot build; .ci/run sets BATKUBE_REQUIRE_CONTROLPLANE=1 so that the tests fail rather than skip.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq openssl; }
if ! command -v go >/dev/null; then
  echo "controlplane: Go >= 1.23 is needed to build kube-apiserver/kube-scheduler/etcd; install it" >&2
  exit 1
fi
start=$(date +%s)
"$PY" -m batkube_py.cli controlplane build
echo "controlplane: binaries ready in $(( $(date +%s) - start )) s"
