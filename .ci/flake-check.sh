#!/usr/bin/env bash
# Syntax check of flake.nix (CI has no nix daemon nor network for the inputs: parsing is what we can
# check). Installs Debian's nix-bin for nix-instantiate when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nix-instantiate >/dev/null; then
  apt-get update -qq && apt-get install -y -qq nix-bin >/dev/null
fi
nix-instantiate --parse flake.nix >/dev/null
echo "flake.nix: parses"
# and its inputs are the pinned ones docs/nix.md describes (evaluates without fetching anything)
nix-instantiate --eval --strict -E 'builtins.attrNames (import ./flake.nix).inputs'
