#!/usr/bin/env bash
# Regenerates the thesis's synthetic workloads with the project's own generator.
set -euo pipefail
cd "$(dirname "$0")"
batkube workload burst --jobs 200 --delay 170 --cpu 1 -o burst_200_delay170.json
batkube workload spaced --jobs 200 --delay 170 --interval 10 --cpu 1 -o spaced_200_delay170.json
