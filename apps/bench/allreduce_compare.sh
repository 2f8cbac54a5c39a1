#!/usr/bin/env bash
# Runs `shardflow-bench allreduce` with 2 and 4 ranks, once against OpenMPI's default
# all-reduce and once against its forced ring (coll_tuned algorithm 4), and keeps the JSON.
#   apps/bench/allreduce_compare.sh [BUILD_DIR] [OUT_DIR] [extra bench flags...]
# Defaults: build, out/allreduce. Each configuration writes OUT_DIR/np{N}_{default,forced_ring}.txt
# (table and JSON lines). On a shared machine run it several times and compare medians.
set -euo pipefail
build=${1:-build}
out=${2:-out/allreduce}
shift $(( $# > 2 ? 2 : $# )) || true
mkdir -p "$out"
bench="$build/bin/shardflow-bench"
mpirun=(mpirun --allow-run-as-root --oversubscribe)
forced=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)
flags=(allreduce --json --min-bytes 4 --max-bytes 64M --step-factor 4 --iters 10 --warmup 2
       --repeats 5 "$@")
for np in 2 4; do
  "${mpirun[@]}" -np "$np" "$bench" "${flags[@]}" | tee "$out/np${np}_default.txt" | grep -v '^{'
  "${mpirun[@]}" "${forced[@]}" -np "$np" "$bench" "${flags[@]}" | tee "$out/np${np}_forced_ring.txt" | grep -v '^{'
done
