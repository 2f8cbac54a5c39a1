# Sourced by the process-level test scripts (tests/*/*_runs.sh, first_hour.sh) right after
# `set -euo pipefail`, with the script's own arguments:
#   source "$(dirname "$0")/../support/process_test.sh" "$@"
# The arguments are MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS... (as the CTest entries pass them).
# Sets mode, bin, work, mpi (array), here (the calling script's folder), src (the checkout),
# py (Debian's python3, which has numpy and h5py); empties WORK_DIR and enters it. Defines
#   fail MESSAGE...            prints "SCRIPT MODE: FAILED: MESSAGE" and exits 1
#   convert SHARDS LIMIT PREFIX   the first LIMIT Fashion-MNIST test images as SHARDS TFRecord
#                              shards at PREFIX (2 ranks, under a 60 s timeout)
#   run_train NP LOG ARGS...   shardflow-train on NP ranks with configs/fmnist_mlp.ini, one
#                              thread, no progress bar, ARGS after; output to LOG; returns its
#                              exit status (under a 60 s timeout)
# shellcheck shell=bash
mode=$1 bin=$2 work=$3
shift 3
[ "$1" = "--" ] && shift
mpi=("$@")
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
script=$(basename "$0")
rm -rf "$work"
mkdir -p "$work"
cd "$work"

fail() { echo "$script $mode: FAILED: $*"; exit 1; }

convert() {
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx \
    --input.split=test --input.limit="$2" --output.shards="$1" --output.path="$3" \
    >convert.log 2>&1 || { cat convert.log; fail "shardflow-convert failed"; }
}

run_train() {
  local np=$1 log=$2
  shift 2
  local rc=0
  timeout -k 5 60 "${mpi[@]}" -np "$np" "$bin/shardflow-train" \
    --config "$src/configs/fmnist_mlp.ini" --no-progress --train.threads=1 "$@" >"$log" 2>&1 ||
    rc=$?
  return $rc
}
