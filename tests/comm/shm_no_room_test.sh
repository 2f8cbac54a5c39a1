#!/usr/bin/env bash
# A node whose shared-memory file system cannot hold the window: OpenMPI 4.1 would hang in
# MPI_Win_allocate_shared (the creating rank returns an error, the others wait for it), so
# shardflow checks the room first, on every rank alike. In a private mount namespace with a
# 4 MiB tmpfs as OpenMPI's backing directory:
#   - an explicit shm-inplace all-reduce of 4 MiB ends non-zero within seconds with the error
#     naming the directory and the bytes needed;
#   - auto falls back to the message-based algorithms: exit 0, every row checked ok;
#   - shardflow-train on 2 ranks (the MLP: 2.1 MB of gradients per rank, too much for the
#     window) says once that the gradients stay private, trains with auto's fallback, exits 0.
# Exit 77 (skip) when a mount namespace or tmpfs mount is not allowed (not root, or a container
# without CAP_SYS_ADMIN).
#   shm_no_room_test.sh BIN_DIR MPIEXEC [MPIEXEC_ARGS...]
set -u
bin=${1:?binary dir with shardflow-bench, -convert, -train} mpiexec=${2:?mpiexec}
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
mpi=("$mpiexec" "$@")
if ! unshare -m true 2>/dev/null; then echo "shm_no_room: no mount namespace; skipping"; exit 77; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/shm_no_room.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/shm"
cat >"$work/inner.sh" <<'INNER'
set -u
work=$1 bin=$2 src=$3
shift 3
bench=$bin/shardflow-bench
mount -t tmpfs -o size=4m tmpfs "$work/shm" || exit 77
export OMPI_MCA_osc_sm_backing_directory="$work/shm"
fail=0
start=$(date +%s)
timeout 60 "$@" -np 2 "$bench" allreduce --min-bytes 4M --max-bytes 4M --iters 1 --repeats 1 \
  --algorithms shm-inplace >"$work/explicit.out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then echo "FAIL: explicit shm: exit $rc"; fail=1; fi
[ $took -le 30 ] || { echo "FAIL: explicit shm took ${took}s to fail"; fail=1; }
grep -q "not enough room in $work/shm for a shared-memory window: [0-9]* bytes needed" \
  "$work/explicit.out" || { echo "FAIL: no error naming the room"; cat "$work/explicit.out"; fail=1; }
timeout 60 "$@" -np 2 "$bench" allreduce --min-bytes 1K --max-bytes 4M --step-factor 64 \
  --iters 1 --repeats 1 --algorithms auto,mpi >"$work/auto.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: auto: exit $rc"; cat "$work/auto.out"; fail=1; }
[ "$(grep -c ' ok$' "$work/auto.out")" -eq 6 ] ||
  { echo "FAIL: auto: not 6 rows checked ok"; cat "$work/auto.out"; fail=1; }
timeout 60 "$@" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=600 --output.shards=2 --output.path="$work/data/fm" >"$work/convert.out" 2>&1 ||
  { echo "FAIL: convert"; cat "$work/convert.out"; exit 1; }
timeout 120 "$@" -np 2 "$bin/shardflow-train" --config "$src/configs/fmnist_mlp.ini" \
  --data.files="$work/data/fm-*.tfrecord" --eval.files= --no-progress --train.threads=1 \
  --train.max_steps=5 --output "$work/run" >"$work/train.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: training: exit $rc"; tail -20 "$work/train.out"; fail=1; }
[ "$(grep -c 'W .*gradients stay in private memory.*not enough room' "$work/train.out")" -eq 1 ] ||
  { echo "FAIL: training: not one warning about the gradients"; tail -20 "$work/train.out"; fail=1; }
grep -q '"steps": 5' "$work/run/summary.json" 2>/dev/null ||
  { echo "FAIL: training: no summary of 5 steps"; fail=1; }
exit $fail
INNER
unshare -m bash "$work/inner.sh" "$work" "$bin" "$src" "${mpi[@]}"
rc=$?
[ $rc -eq 0 ] && echo "shm_no_room: ok"
exit $rc
