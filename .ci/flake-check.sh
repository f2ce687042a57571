#!/usr/bin/env bash
# Syntax check of flake.nix (CI has no nix daemon nor network for the inputs: parsing is what we can
# check). Needs nix-instantiate (Debian's nix-bin, which .ci/run installs); installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nix-instantiate >/dev/null || { echo "nix-instantiate not found (install nix-bin)" >&2; exit 3; }
nix-instantiate --parse flake.nix >/dev/null
echo "flake.nix: parses"
# and its inputs are the pinned ones docs/nix.md describes (evaluates without fetching anything)
nix-instantiate --eval --strict -E 'builtins.attrNames (import ./flake.nix).inputs'
