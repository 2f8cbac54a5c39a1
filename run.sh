#!/usr/bin/env bash
# The main job on the embedded default data (Fashion-MNIST from the Debian package
# dataset-fashion-mnist): set-up, build, and then the pipeline stages that exist so far.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >build-configure.log 2>&1 \
  || { cat build-configure.log; exit 1; }
cmake --build build -j "$(nproc)"
exec scripts/main_job.sh "$@"
