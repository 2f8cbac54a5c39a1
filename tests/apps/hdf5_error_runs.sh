#!/usr/bin/env bash
# Issues 27.9 and 20.15: what is wrong with an HDF5 file, or with the disk, said in a user's
# terms and with one exit code in every program. Prints "hdf5_error_runs.sh MODE: ok" last.
#   hdf5_error_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   inputs     a truncated HDF5 file and a file that is not HDF5, given to shardflow-convert,
#              -train, -predict and -inspect: exit 3 (data loss) everywhere, one line saying
#              "the file is truncated" / "it is not an HDF5 file", naming the file, quoting no
#              source code (before: exit 1 with "H5Fopen(path.c_str(), ...) failed at
#              <source file of the HDF5 layer>:216" from three programs, exit 3 from inspect).
#   disk_full  an HDF5 output on a full device (a link to /dev/full): exit 1 (I/O) with
#              "No space left on device (errno 28)" and the path, not an HDF5 "Write failed"
#              chain; an output folder the system refuses: exit 1 naming path and errno, not
#              "internal error".
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# one_line LOG RC WANT_RC PATTERN: the run exited WANT_RC with exactly one error line matching.
one_line() {
  local log=$1 rc=$2 want=$3 pattern=$4
  [ "$rc" -eq "$want" ] || { cat "$log"; fail "$log: exit $rc, wanted $want"; }
  [ "$(grep -c 'error: ' "$log")" -eq 1 ] || { cat "$log"; fail "$log: not one error line"; }
  grep -q "error: $pattern" "$log" || { cat "$log"; fail "$log: no line matching '$pattern'"; }
  if grep -q "failed at \|c_str()" "$log"; then cat "$log"; fail "$log: quotes source code"; fi
}

run() {  # run LOG NP PROGRAM ARGS...: sets rc
  local log=$1 np=$2 prog=$3
  shift 3
  rc=0
  timeout -k 2 60 "${mpi[@]}" -np "$np" "$bin/$prog" "$@" >"$log" 2>&1 || rc=$?
}

fx=$src/tests/fixtures/hdf5
case "$mode" in
inputs)
  head -c 200000 "$fx/fmnist-test-1000.h5" >trunc.h5
  echo "not an HDF5 file" >plain.h5
  convert 2 400 data/fm
  run_train 2 train.log --data.files='data/fm-*.tfrecord' --eval.files= --train.max_steps=2 \
    --output run || { cat train.log; fail "training failed"; }
  features=(--data.format=hdf5 --data.features='images:float:uint8:28x28x1, labels:int64:int64:scalar'
            --model.input_feature=images --model.label_feature=labels)
  for f in trunc plain; do
    want="data loss: cannot open the HDF5 file: the file is truncated .*file=$f.h5"
    [ $f = plain ] && want="data loss: cannot open the HDF5 file: it is not an HDF5 file.*file=$f.h5"
    # convert opens its input in the run phase, where every rank that fails says so (a
    # separate issue): one rank here.
    run convert-$f.log 1 shardflow-convert --input.format=hdf5 --input.path=$f.h5 \
      --input.datasets=images,labels --output.path=out-$f/x
    one_line convert-$f.log $rc 3 "$want"
    run train-$f.log 2 shardflow-train --config "$src/configs/fmnist_mlp.ini" --no-progress \
      --eval.files= --data.files=$f.h5 "${features[@]}" --output run-$f
    one_line train-$f.log $rc 3 "$want"
    run predict-$f.log 2 shardflow-predict --config "$src/configs/fmnist_mlp.ini" \
      --checkpoint run/checkpoints "${features[@]}" --input $f.h5 --output p-$f.csv
    one_line predict-$f.log $rc 3 "$want"
    rc=0
    "$bin/shardflow-inspect" verify $f.h5 >inspect-$f.log 2>&1 || rc=$?
    [ $rc -eq 3 ] || { cat inspect-$f.log; fail "inspect verify $f.h5: exit $rc, wanted 3"; }
  done
  ;;
disk_full)
  [ -w /dev/full ] || { echo "hdf5_error_runs.sh $mode: ok (no /dev/full here)"; exit 0; }
  ln -s /dev/full full.h5
  run full.log 1 shardflow-convert --input.format=hdf5 --input.path="$fx/fmnist-test-1000.h5" \
    --input.datasets=images,labels --output.format=hdf5 --output.path=full.h5
  one_line full.log $rc 1 "I/O error: cannot create the HDF5 file: No space left on device (errno 28).*file=full.h5"
  # An output folder the system refuses (here: under a regular file; as root, permissions do
  # not refuse): an I/O error with the path and errno, not "internal error: filesystem error".
  echo x >a-file
  convert 2 100 data/fm
  run dir.log 2 shardflow-train --config "$src/configs/fmnist_mlp.ini" --no-progress \
    --eval.files= --data.files='data/fm-*.tfrecord' --train.max_steps=1 --output a-file/run
  one_line dir.log $rc 1 "I/O error: cannot create the checkpoint folder: Not a directory (errno 20) \[file=a-file/run/checkpoints key=checkpoint.dir\]"
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "hdf5_error_runs.sh $mode: ok"
