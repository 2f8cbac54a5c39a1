#!/usr/bin/env bash
# The main job on the embedded default data (Fashion-MNIST from the Debian package
# dataset-fashion-mnist): set-up, build of the programs (./test.sh builds the tests), and then
# scripts/main_job.sh: convert, train, predict.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >build-configure.log 2>&1 \
  || { cat build-configure.log; exit 1; }
programs=(shardflow-train shardflow-convert shardflow-predict shardflow-inspect)
cmake --build build -j "$(nproc)" --target "${programs[@]}"
exec scripts/main_job.sh "$@"
