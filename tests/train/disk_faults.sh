#!/usr/bin/env bash
# Disks and faults (issue 16): a full disk, a read-only output folder, an input file truncated
# during the run, a rank killed inside an all-reduce. Each ends the run non-zero with one line
# naming the path (and errno) or the rank; nothing half-written is left as if valid; --resume
# then finishes from the previous checkpoint. Prints "disk_faults.sh MODE: ok" last; exits 77
# (skipped, with the reason) where a private mount namespace or tmpfs is not allowed.
#   disk_faults.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   enospc_tmpfs  output on an 8 MiB tmpfs (a private mount namespace): the second checkpoint
#                 (6.4 MB each with Adam) does not fit: exit 1, "No space left on device (errno 28)" naming
#                 the temporary file, which is gone; the tmpfs grown, --resume continues from the
#                 first checkpoint and finishes.
#   enospc_injected  SHARDFLOW_TEST_CHECKPOINT_FAULT=enospc:2 (no mount needed): the same line,
#                 no temporary file left; --resume from step 5 ends bit-identical to a run never
#                 interrupted.
#   readonly      output folder on a read-only mount: exit 1 at start-up, "Read-only file system
#                 (errno 30)" naming the checkpoint folder.
#   truncated     a data file truncated while the run reads it: exit 3 naming the file and offset.
#   removed       a data file deleted while the run reads it: exit 2 naming the file and the error
#                 when the next epoch opens it.
#   kill_allreduce  rank 1 killed inside the gradient all-reduce of step 7: the job ends within
#                 the watchdog's time, mpiexec names rank 1; --resume from step 5 ends bit-identical.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

convert 3 1200 data/fm
common=(--data.files='data/fm-*.tfrecord' --data.shuffle_buffer=500 --train.batch_size=32
        --train.epochs=2 --train.log_every=1 --train.optimizer=adam --train.lr=0.002
        --checkpoint.keep_last=0 --data.parallel_reads=1 --data.parallel_calls=1 --eval.files=)

in_namespace() {  # SCRIPT: runs bash SCRIPT in a private mount namespace; exit 77 when denied
  if ! unshare -m true 2>/dev/null; then
    echo "$script $mode: SKIPPED: no private mount namespace here (needs root or CAP_SYS_ADMIN)"
    exit 77
  fi
  local rc=0
  unshare -m --propagation private bash "$1" || rc=$?
  if [ $rc -eq 77 ]; then echo "$script $mode: SKIPPED: cannot mount a tmpfs here"; exit 77; fi
  [ $rc -eq 0 ] || fail "the steps inside the mount namespace failed (status $rc)"
}

# The body of a mount-namespace mode, sourced by the inner script with the same variables.
export_env() {
  declare -p mpi bin src py script mode common | sed 's/^declare -[a-zA-Z]* /declare -g /'
  declare -f fail run_train
}

after_first_step() {  # COMMAND...: runs it once run/metrics.jsonl has a step (mid-run, however
  # long the start took on a loaded machine)
  for _ in $(seq 600); do
    grep -q '"step"' run/metrics.jsonl 2>/dev/null && break
    sleep 0.1
  done
  "$@"
}

case "$mode" in
enospc_tmpfs)
  { export_env; cat <<'INNER'; } >inner.sh
set -euo pipefail
mkdir -p small
mount -t tmpfs -o size=8m tmpfs small || exit 77
rc=0
run_train 2 full.log "${common[@]}" --output small/run --checkpoint.every_steps=19 \
  --checkpoint.every_epochs=0 || rc=$?
[ $rc -eq 1 ] || { cat full.log; fail "exit status $rc on a full disk, wanted 1"; }
grep -q "error: I/O error: .*No space left on device (errno 28).*file=small/run/checkpoints/ckpt-000000038.h5.tmp" full.log ||
  { cat full.log; fail "no line naming the full disk and the file"; }
ls small/run/checkpoints | grep -q tmp && { ls -la small/run/checkpoints; fail "a temporary file was left"; }
[ -f small/run/checkpoints/ckpt-000000019.h5 ] || fail "the first checkpoint is gone"
mount -o remount,size=64m small
run_train 2 resume.log "${common[@]}" --output small/run --checkpoint.every_steps=19 \
  --checkpoint.every_epochs=0 --train.epochs=3 --resume || { cat resume.log; fail "resume failed"; }
grep -q "resuming from .*ckpt-000000019.h5 at step 19" resume.log || { cat resume.log; fail "no resume from 19"; }
INNER
  in_namespace inner.sh
  ;;
enospc_injected)
  run_train 2 a.log "${common[@]}" --output run_a || { cat a.log; fail "uninterrupted run failed"; }
  rc=0
  SHARDFLOW_TEST_CHECKPOINT_FAULT=enospc:2 run_train 2 b.log "${common[@]}" --output run_b \
    --checkpoint.every_steps=5 --checkpoint.every_epochs=0 || rc=$?
  [ $rc -eq 1 ] || { cat b.log; fail "exit status $rc, wanted 1"; }
  n=$(grep -c "error: I/O error: cannot write the HDF5 data: No space left on device (errno 28) (injected.*file=run_b/checkpoints/ckpt-000000010.h5.tmp" b.log || true)
  [ "$n" -eq 1 ] || { cat b.log; fail "$n error lines naming the full disk, wanted 1"; }
  ls run_b/checkpoints | grep -q tmp && { ls -la run_b/checkpoints; fail "a temporary file was left"; }
  run_train 2 r.log "${common[@]}" --output run_b --resume --checkpoint.every_steps=5 \
    --checkpoint.every_epochs=0 || { cat r.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-000000005.h5 at step 5" r.log || { cat r.log; fail "no resume from 5"; }
  $py "$here/compare_runs.py" run_a run_b 38 || fail "the resumed run differs"
  ;;
readonly)
  { export_env; cat <<'INNER'; } >inner.sh
set -euo pipefail
mkdir -p ro
mount -t tmpfs -o size=1m tmpfs ro || exit 77
mkdir -p ro/out
mount -o remount,ro ro
rc=0
run_train 2 ro.log "${common[@]}" --output ro/out/run || rc=$?
[ $rc -eq 1 ] || { cat ro.log; fail "exit status $rc on a read-only folder, wanted 1"; }
grep -q "error: I/O error: .*Read-only file system (errno 30).*file=ro/out/run" ro.log ||
  { cat ro.log; fail "no line naming the read-only folder"; }
INNER
  in_namespace inner.sh
  ;;
truncated)
  cp -r data data2
  rc=0
  after_first_step truncate -s 100000 data2/fm-00001-of-00003.tfrecord &
  SHARDFLOW_TEST_FAULT=slow:0:200 run_train 2 t.log "${common[@]}" --output run \
    --data.files='data2/fm-*.tfrecord' --train.epochs=3 --train.batch_size=100 \
    --data.shuffle_buffer=100 || rc=$?
  wait
  [ $rc -eq 3 ] || { cat t.log; fail "exit status $rc, wanted 3 (data loss)"; }
  # Which check sees it first depends on timing: the size check when a read starts, or a record
  # cut short.
  grep -E -q "error: data loss: .*(truncated or replaced during the run|truncated record: ).*file=data2/fm-00001-of-00003.tfrecord offset=[0-9]*" t.log ||
    { cat t.log; fail "no line naming the truncated file and record"; }
  ;;
removed)
  cp -r data data2
  rc=0
  after_first_step rm data2/fm-00001-of-00003.tfrecord &
  SHARDFLOW_TEST_FAULT=slow:0:200 run_train 2 t.log "${common[@]}" --output run \
    --data.files='data2/fm-*.tfrecord' --train.epochs=3 --train.batch_size=100 \
    --data.shuffle_buffer=100 || rc=$?
  wait
  [ $rc -eq 2 ] || { cat t.log; fail "exit status $rc, wanted 2 (not found)"; }
  grep -q "error: not found: stage 'read': cannot open file: No such file or directory \[file=data2/fm-00001-of-00003.tfrecord\]" t.log ||
    { cat t.log; fail "no line naming the removed file"; }
  ;;
kill_allreduce)
  run_train 2 a.log "${common[@]}" --output run_a || { cat a.log; fail "uninterrupted run failed"; }
  rc=0
  start=$(date +%s)
  SHARDFLOW_TEST_FAULT=kill_allreduce:1:7 run_train 2 b.log "${common[@]}" --output run_b \
    --checkpoint.every_steps=5 --checkpoint.every_epochs=0 --dist.watchdog_seconds=5 || rc=$?
  took=$(( $(date +%s) - start ))
  [ $rc -ne 0 ] || { cat b.log; fail "exit 0 after a rank was killed"; }
  grep -q "SHARDFLOW_TEST_FAULT: rank 1 raises SIGKILL inside the gradient all-reduce of step 7" b.log ||
    { cat b.log; fail "the fault was not injected"; }
  grep -E -q "process rank 1 .*exited on signal 9" b.log || { cat b.log; fail "rank 1's death not named"; }
  [ $took -le 30 ] || fail "the job took ${took}s to end"
  run_train 2 r.log "${common[@]}" --output run_b --resume --checkpoint.every_steps=5 \
    --checkpoint.every_epochs=0 || { cat r.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-000000005.h5 at step 5" r.log || { cat r.log; fail "no resume from 5"; }
  $py "$here/compare_runs.py" run_a run_b 38 || fail "the resumed run differs"
  ;;
*) fail "unknown mode" ;;
esac
echo "$script $mode: ok"
