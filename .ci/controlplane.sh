#!/usr/bin/env bash
# Builds (first time) or finds in the cache the pinned etcd 3.7.0 / kube-apiserver / kube-scheduler 1.37.2
# (batkube's kube-scheduler main, with the simulated-clock endpoint of --sync queue) that the real-backend
# tests (tests/test_apiserver*.py, tests/test_controlplane*.py, tests/test_parity_suite.py) need: `batkube
# controlplane build`, plus the system packages it needs. Idempotent: a second run is a no-op. Cache:
# ${BATKUBE_CACHE:-$HOME/.cache/batkube-py} (Go module + build cache + binaries, keyed by version and
# sources; 1.32.6 too, for the parity suite's twin-release run). Cold on 2 cores: ~5 min of downloads and ~20
# min of compiling with other jobs on the machine (kube-apiserver is most of it), well within CI's 90
# min. Fails loudly if it cannot build; .ci/run sets BATKUBE_REQUIRE_CONTROLPLANE=1 so that the tests
# fail rather than skip.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
command -v openssl >/dev/null || { apt-get update -qq && apt-get install -y -qq openssl; }
if ! command -v go >/dev/null; then
  echo "controlplane: Go >= 1.26 is needed to build kube-apiserver/kube-scheduler 1.37.2 and etcd 3.7.0; install it" >&2
  exit 1
fi
start=$(date +%s)
"$PY" -m batkube_py.cli controlplane build
# the parity suite also runs the release whose semantics the twin follows (tests/test_parity_suite.py)
"$PY" -m batkube_py.cli controlplane build --kube-version 1.32.6
echo "controlplane: binaries ready in $(( $(date +%s) - start )) s"
