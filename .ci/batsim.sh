#!/usr/bin/env bash
# Makes ../shared's real Batsim 4.2.1 (shared/batsim/real-4.2.1/bin/batsim) runnable: installs its runtime
# Debian packages when one is missing (its README lists them), then checks `batsim --version`. Idempotent:
# nothing is installed when they all are. Tests that compare the Batsim double with real Batsim
# (tests/test_batsim_double_refusals.py, tests/test_preemption_real_batsim.py) fail under CI without it.
set -euo pipefail
cd "$(dirname "$0")/.."
BATSIM=${BATKUBE_REAL_BATSIM:-../shared/batsim/real-4.2.1/bin/batsim}
PACKAGES=(libsimgrid3.32 libzmq5 libdocopt0 libpugixml1v5 libboost-context1.74.0 libboost-stacktrace1.74.0
          libhiredis0.14 libev4)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "batsim: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -x "$BATSIM" ]; then
  echo "batsim: $BATSIM not found (../shared is missing)" >&2
  exit 1
fi
version=$("$BATSIM" --version)
[ "$version" = "4.2.1" ] || { echo "batsim: $BATSIM --version printed '$version', expected 4.2.1" >&2; exit 1; }
echo "batsim: real Batsim $version ready ($BATSIM)"
