#!/usr/bin/env bash
# The steps of ./run.sh after the build. Each step appears here when the capability behind it
# exists; nothing is simulated.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "shardflow main job: convert Fashion-MNIST, train data-parallel on 2 ranks, evaluate."
echo "Not available yet: training arrives with issue 6 (data-parallel training)." >&2
exit 1
