#!/usr/bin/env bash
# Regenerates the platforms of this directory with the project's own generator.
set -euo pipefail
cd "$(dirname "$0")"
batkube platform --nodes 16 --cores 1 --memory 4Gi -o cluster_16x1core.xml
batkube platform --nodes 1 --cores 6 --memory 4Gi -o cluster_1x6core.xml
batkube platform --nodes 1000 --cores 8 --memory 32Gi -o cluster_1000x8core.xml
