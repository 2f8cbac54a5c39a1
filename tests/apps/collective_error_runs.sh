#!/usr/bin/env bash
# Issue 27.1: an error on one rank inside a collective section ends the whole job within
# seconds with that rank's one error line, in every SPMD program. Read errors are injected on one
# rank by damaging the part of an input only that rank reads. Prints "collective_error_runs.sh
# MODE: ok" last when every check passed.
#   collective_error_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   convert  an HDF5 input with a corrupt gzip chunk (the first: rank 0 reads it; the last: the
#            last rank reads it) converted to TFRecord shards and to one HDF5 file (written
#            collectively) at 2 and 3 ranks. Before the fix the failing rank waited in the
#            collective close of the input while the others waited in an all-reduce.
#   train    a damaged record in the file only rank 1 reads: at its first training step, at
#            its last step, and in the evaluation files.
#   predict  a damaged record read by the last rank, predictions written as HDF5 and CSV.
# Every run must end within 20 s (`timeout` would give 124) with a non-zero status and exactly
# one "error:" line, from the failing rank, naming the damaged file.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# expect_one_error LOG RANK FILE: the job failed with one error line, from RANK, naming FILE.
expect_one_error() {
  local log=$1 rank=$2 file=$3 rc=$4
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { cat "$log"; fail "$log: the job hung (killed after 20 s)"; }
  [ "$rc" -ne 0 ] || { cat "$log"; fail "$log: exit status 0 after a read error"; }
  local n
  n=$(grep -c "error: " "$log" || true)
  [ "$n" -eq 1 ] || { cat "$log"; fail "$log: $n error lines, want 1"; }
  grep -q "^\[rank $rank\] error: .*$file" "$log" ||
    { cat "$log"; fail "$log: the error line is not rank $rank's naming $file"; }
}

# run_np LOG NP PROGRAM ARGS...: the program on NP ranks under a 20 s timeout; sets rc.
run_np() {
  local log=$1 np=$2 prog=$3
  shift 3
  rc=0
  timeout -k 2 20 "${mpi[@]}" -np "$np" "$bin/$prog" "$@" >"$log" 2>&1 || rc=$?
}

# flip FILE OFFSET: inverts the byte at OFFSET (negative: from the end).
flip() {
  $py -c "
import sys
p, o = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, 'rb').read())
b[o] ^= 0xff
open(p, 'wb').write(b)" "$1" "$2"
}

case "$mode" in
convert)
  $py - "$src/tests/fixtures/hdf5/fmnist-test-1000.h5" <<'PY'
import h5py
src = h5py.File(__import__("sys").argv[1], "r")
images, labels = src["images"][:], src["labels"][:]
with h5py.File("gz.h5", "w") as f:
    f.create_dataset("images", data=images, chunks=(100, 28, 28), compression="gzip")
    f.create_dataset("labels", data=labels)
with h5py.File("gz.h5", "r") as f:
    d = f["images"]
    chunks = {"first": d.id.get_chunk_info(0), "last": d.id.get_chunk_info(d.id.get_num_chunks() - 1)}
for name, c in chunks.items():
    data = bytearray(open("gz.h5", "rb").read())
    for k in range(16):
        data[c.byte_offset + c.size // 2 + k] ^= 0xff
    open("bad-%s.h5" % name, "wb").write(data)
PY
  for np in 2 3; do
    for chunk in first last; do
      rank=0
      [ $chunk = last ] && rank=$((np - 1))
      for out in tfrecord hdf5; do
        log=convert-$np-$chunk-$out.log
        run_np $log $np shardflow-convert --input.format=hdf5 --input.path=bad-$chunk.h5 \
          --input.datasets=images,labels --output.format=$out --output.path=out-$np-$chunk-$out/x
        expect_one_error $log $rank bad-$chunk.h5 $rc
      done
    done
  done
  ;;
train)
  convert 2 1200 data/fm
  common=(--config "$src/configs/fmnist_mlp.ini" --no-progress --train.threads=1
          --data.shard_policy=file --train.epochs=1 --train.batch_size=32)
  for where in first last eval; do
    rm -rf bad && cp -r data bad
    offset=100
    [ $where = first ] || offset=-100
    flip bad/fm-00001-of-00002.tfrecord $offset
    files='bad/fm-*.tfrecord' eval=
    [ $where = eval ] && files='data/fm-*.tfrecord' eval='bad/fm-*.tfrecord'
    run_np train-$where.log 2 shardflow-train "${common[@]}" --data.files="$files" \
      --eval.files="$eval" --output run-$where
    expect_one_error train-$where.log "[01]" bad/fm-00001-of-00002.tfrecord $rc
  done
  ;;
predict)
  convert 2 1200 data/fm
  run_train 2 train.log --data.files='data/fm-*.tfrecord' --eval.files= --train.max_steps=4 \
    --output run || { cat train.log; fail "training failed"; }
  rm -rf bad && cp -r data bad
  flip bad/fm-00001-of-00002.tfrecord -100
  for np in 2 3; do
    for out in h5 csv; do
      run_np predict-$np-$out.log $np shardflow-predict --config "$src/configs/fmnist_mlp.ini" \
        --checkpoint run/checkpoints --input 'bad/fm-*.tfrecord' --output p-$np.$out \
        --train.threads=1
      expect_one_error predict-$np-$out.log $((np - 1)) bad/fm-00001-of-00002.tfrecord $rc
    done
  done
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "collective_error_runs.sh $mode: ok"
