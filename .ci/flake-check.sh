#!/usr/bin/env bash
# What CI can check of flake.nix without a nix daemon or the network: it parses, its inputs are the
# ones docs/nix.md describes, and each is pinned to a full 40-hex revision. Needs nix-instantiate
# (.ci/run installs Debian's nix-bin; this script installs nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nix-instantiate >/dev/null || { echo "nix-instantiate not found (Debian: nix-bin)" >&2; exit 2; }
nix-instantiate --parse flake.nix >/dev/null
echo "flake.nix: parses"
nix-instantiate --eval --strict -E 'builtins.attrNames (import ./flake.nix).inputs'
# each input's URL, evaluated (nothing is fetched): one "name url" line each
nix-instantiate --eval --strict --json -E \
  'builtins.mapAttrs (n: v: if builtins.isString v then v else v.url) (import ./flake.nix).inputs' \
  | python3 -c 'import json, sys; [print(k, v) for k, v in json.load(sys.stdin).items()]'
