#!/usr/bin/env bash
# Process-level tests of shardflow-train under mpiexec, on small Fashion-MNIST shards made by
# shardflow-convert. Prints "train_runs.sh MODE: ok" last when every check passed.
#   train_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   resume  run A trains N steps uninterrupted (checkpoint every K); run B stops at K and
#           --resume continues to N. B's metrics lines (loss, accuracy, lr) for every step and
#           the final checkpoint's /params, /buffers and /optimizer must equal A's bit for bit.
#           The model has dropout and the data is shuffled, so step seeds, the shuffle and
#           iterator state, the schedule and the optimizer state all have to be restored.
#   resume_cache, resume_file_cache  the same with data.cache = memory (issue 27.2: the saved
#           state replays a cache the resumed process must refill) or a file cache at 2 ranks
#           (issue 27.4: one file per rank).
#   precision  train.precision (issue 48): bf16 on a CPU without it (oneDNN held to AVX2 by
#           ONEDNN_MAX_CPU_ISA) is refused in one line, exit 2, and auto runs fp32 saying why.
#           Where the CPU has bf16: resume in bf16 is bit-identical (as resume), summary.json says
#           bf16 (and, with train.peak_probe = on, with the report, the fraction of peak), and a
#           bf16 checkpoint resumes as fp32, saying so (a small CNN: bf16 GEMMs and oneDNN bf16
#           convolutions).
#   kill    SHARDFLOW_TEST_FAULT=kill:1:S: rank 1 dies at step S; the job must end non-zero. Then
#           --resume=auto (a requeue) finds no checkpoint: it starts fresh, with the dead run's
#           metrics.jsonl and TensorBoard events set aside in OUTPUT/unfinished-run-1/.
#   hang    SHARDFLOW_TEST_FAULT=hang:1:S: rank 1 stops (SIGSTOP) at step S; the others' watchdog
#           (dist.watchdog_seconds=3) must end the job non-zero, naming rank 1, once.
#   nonfinite  the 784-512-256-10 MLP trains 4 steps (checkpoints at 2 and 4), then resumes with
#           train.lr=1e6 and a checkpoint every step: exit 3 at the first non-finite step with one
#           line naming the step, epoch, quantity, learning rate and a hint; ckpt 4 unchanged
#           byte for byte and still loads (a warm start from it trains). Under skip_step the
#           diverged run fails after max_skipped_steps in a row.
#   left_out  uneven file shards at 3 ranks: the batches never trained on are counted (27.5).
#   grad_log  the gradient bucket / wire log line against what runs (27.6).
#   empty_shard  file sharding leaves a rank an empty file or none: named, with the fix (27.7).
#   bigger_batch  P ranks x batch B = 1 rank x batch P*B, under the README's condition (27.11).
#   uneven  7 shards over 2 and 4 ranks with a partial last batch: exit 0, the ranks agree on
#           a step count (logged), and the steps run are epochs x that count.
# Each mode must finish well within the CTest timeout; every mpiexec runs under `timeout`.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# train NP LOG ARGS...: shardflow-train on the small model; its exit status is returned.
train() {
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" --eval.files= \
    --model.spec='flatten, dense:64, relu, dropout:0.2, dense:10' "$@"
}

case "$mode" in
resume | resume_cache | resume_file_cache)
  convert 3 1200 data/fm
  cache=(--data.shuffle_buffer=500)
  # Without a shuffle the cache stage's own state is saved (a shuffle keeps its elements).
  [ "$mode" = resume_cache ] && cache=(--data.cache=memory --data.shuffle_buffer=0)
  [ "$mode" = resume_file_cache ] && cache=(--data.cache="$work/cache/fm")
  # 1200 records / 2 ranks / batch 32 = 19 steps per epoch (a partial last batch); 2 epochs =
  # 38 steps. K = 25 cuts the second epoch mid-way (the shuffle of epoch 2 is under way).
  # A short warm-up and a cosine schedule: the learning rate differs at every step.
  common=(--data.files='data/fm-*.tfrecord' --train.batch_size=32
          --train.epochs=2 --train.warmup_steps=3 --train.log_every=1 --train.optimizer=adam
          --train.lr=0.002 --checkpoint.keep_last=0 "${cache[@]}")
  train 2 a.log "${common[@]}" --checkpoint.every_steps=25 --output run_a ||
    { cat a.log; fail "run A failed"; }
  train 2 b1.log "${common[@]}" --train.max_steps=25 --output run_b ||
    { cat b1.log; fail "run B (first part) failed"; }
  [ -f run_b/checkpoints/ckpt-000000025.h5 ] || fail "run B left no checkpoint at step 25"
  train 2 b2.log "${common[@]}" --output run_b --resume || { cat b2.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-000000025.h5 at step 25" b2.log || fail "no resume line"
  $py "$here/compare_runs.py" run_a run_b 38 || fail "runs differ"
  if [ "$mode" = resume_file_cache ]; then
    for r in 0 1; do [ -f cache/fm.rank$r-of-2 ] || fail "no cache file for rank $r"; done
  fi
  ;;
precision)
  convert 3 1200 data/fm
  files=(--data.files='data/fm-*.tfrecord')
  rc=0
  ONEDNN_MAX_CPU_ISA=AVX2 train 2 refused.log "${files[@]}" --train.precision=bf16 --check \
    --output refused || rc=$?
  [ $rc -eq 2 ] || { cat refused.log; fail "bf16 without the instructions: exit $rc, wanted 2"; }
  want="error: invalid argument: train.precision = bf16 cannot run on cpu: this CPU has neither "
  want+="AVX512-BF16 nor AMX-BF16 \(oneDNN's best instruction set here: avx2\)"
  n=$(grep -E -c "$want" refused.log || true)
  [ "$n" -eq 1 ] || { cat refused.log; fail "$n lines refuse bf16, wanted 1"; }
  [ "$(grep -c error refused.log)" -eq 1 ] || { cat refused.log; fail "more than one error line"; }
  ONEDNN_MAX_CPU_ISA=AVX2 train 2 auto.log "${files[@]}" --train.precision=auto --check \
    --output auto || { cat auto.log; fail "auto without bf16 failed"; }
  grep -q "train.precision = auto runs fp32 (bf16: this CPU has neither" auto.log ||
    { cat auto.log; fail "auto did not say it runs fp32"; }
  rc=0
  train 2 probe.log "${files[@]}" --train.precision=bf16 --check --output probe || rc=$?
  if [ $rc -ne 0 ]; then
    grep -q "train.precision = bf16 cannot run on cpu" probe.log || { cat probe.log; fail "probe"; }
    echo "this CPU has no bf16: the bf16 runs are not made here ($(grep -o 'this CPU.*)' probe.log))"
    echo "$script $mode: ok"
    exit 0
  fi
  common=("${files[@]}" --train.batch_size=32 --train.epochs=2 --train.warmup_steps=3
          --train.log_every=1 --train.optimizer=adam --train.lr=0.002 --checkpoint.keep_last=0
          --data.shuffle_buffer=500 --train.precision=bf16
          --model.spec='conv:8:3x3:same, relu, maxpool:2, conv:8:3x3:same, relu, flatten, dense:10')
  train 2 a.log "${common[@]}" --checkpoint.every_steps=25 --train.peak_probe=on --output run_a ||
    { cat a.log; fail "run A failed"; }
  grep -q '"precision": *"bf16"' run_a/summary.json || fail "summary.json does not say bf16"
  want="GFLOP/s of model arithmetic = [0-9.]+ of the [0-9]+ GFLOP/s its bf16 GEMM reaches here"
  grep -qE "$want" a.log || { cat a.log; fail "the report states no fraction of peak"; }
  grep -q '"fraction_of_peak"' run_a/summary.json || fail "summary.json has no fraction_of_peak"
  grep -q '"precision_kernels": *"oneDNN [^"]*bf16' run_a/summary.json ||
    fail "summary.json does not name the bf16 kernels"
  train 2 b1.log "${common[@]}" --train.max_steps=25 --output run_b ||
    { cat b1.log; fail "run B (first part) failed"; }
  cp -r run_b run_c
  train 2 b2.log "${common[@]}" --output run_b --resume || { cat b2.log; fail "resume failed"; }
  $py "$here/compare_runs.py" run_a run_b 38 || fail "bf16 runs differ"
  train 2 c.log "${common[@]}" --train.precision=fp32 --train.max_steps=26 --output run_c \
    --resume || { cat c.log; fail "the bf16 checkpoint did not resume as fp32"; }
  grep -q "ckpt-000000025.h5 was written with train.precision = bf16; it loads into this run's train.precision = fp32" c.log ||
    { cat c.log; fail "resuming a bf16 checkpoint as fp32 did not say so"; }
  ;;
kill)
  convert 3 1200 data/fm
  start=$(date +%s)
  rc=0
  SHARDFLOW_TEST_FAULT=kill:1:5 train 2 kill.log --data.files='data/fm-*.tfrecord' \
    --dist.watchdog_seconds=3 --train.batch_size=16 --train.log_every=1 --output run || rc=$?
  took=$(( $(date +%s) - start ))
  # mpiexec passes the signal on (137); `timeout` (60 s) would have taken far longer.
  [ $rc -ne 0 ] || fail "exit status 0 after a rank was killed"
  grep -q "SHARDFLOW_TEST_FAULT: rank 1 raises SIGKILL at step 5" kill.log ||
    { cat kill.log; fail "the fault was not injected"; }
  n=$(grep -E -c "process rank 1 .*exited on signal 9" kill.log || true)
  [ "$n" -eq 1 ] || { cat kill.log; fail "$n lines say rank 1 died, wanted 1"; }
  echo "killed rank 1 at step 5: job ended with status $rc after ${took}s"
  [ $took -le 30 ] || fail "the job took ${took}s to end"
  # A requeued job (--resume=auto) finds no checkpoint: it starts fresh, and the dead run's
  # metrics and TensorBoard events are set aside, not continued.
  grep -q '"step":4' run/metrics.jsonl || { cat run/metrics.jsonl; fail "no step 4 metrics"; }
  train 1 requeue.log --data.files='data/fm-*.tfrecord' --train.batch_size=16 \
    --train.log_every=1 --train.max_steps=2 --output run --resume=auto ||
    { cat requeue.log; fail "--resume=auto after a run with no checkpoint failed"; }
  grep -q "set aside in run/unfinished-run-1" requeue.log || { cat requeue.log; fail "no set-aside line"; }
  [ -f run/unfinished-run-1/metrics.jsonl ] && [ -d run/unfinished-run-1/tb ] ||
    { ls -R run; fail "the dead run's logs were not set aside"; }
  ! grep -q '"step":[34]' run/metrics.jsonl || { cat run/metrics.jsonl; fail "metrics mixed runs"; }
  grep -q '"step":2' run/metrics.jsonl || { cat run/metrics.jsonl; fail "no fresh metrics"; }
  ;;
hang)
  convert 3 1200 data/fm
  start=$(date +%s)
  rc=0
  SHARDFLOW_TEST_FAULT=hang:1:5 train 2 hang.log --data.files='data/fm-*.tfrecord' \
    --dist.watchdog_seconds=3 --train.batch_size=16 --output run || rc=$?
  took=$(( $(date +%s) - start ))
  [ $rc -ne 0 ] || fail "exit status 0 after a rank hung"
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || { cat hang.log; fail "the job hung (killed by timeout)"; }
  grep -q "SHARDFLOW_TEST_FAULT: rank 1 raises SIGSTOP at step 5" hang.log ||
    { cat hang.log; fail "the fault was not injected"; }
  n=$(grep -E -c "error: .*watchdog: collective .*did not complete within 3\.0 s" hang.log || true)
  [ "$n" -eq 1 ] || { cat hang.log; fail "$n watchdog error lines, wanted 1"; }
  grep -E "error: .*watchdog" hang.log | grep -E -q "(had not joined it|no answer \(dead or stuck outside MPI\)): \[1\]" ||
    { cat hang.log; fail "the watchdog line does not name rank 1"; }
  echo "rank 1 stopped at step 5: job ended with status $rc after ${took}s"
  [ $took -le 30 ] || fail "the job took ${took}s to end"
  ;;
nonfinite)
  convert 3 1200 data/fm
  common=(--data.files='data/fm-*.tfrecord' --model.spec=mlp --train.batch_size=32
          --train.warmup_steps=0 --train.schedule=constant --checkpoint.keep_last=0 --output run)
  train 2 good.log "${common[@]}" --train.max_steps=4 --checkpoint.every_steps=2 ||
    { cat good.log; fail "the sane run failed"; }
  sum=$(md5sum run/checkpoints/ckpt-000000004.h5)
  rc=0
  train 2 bad.log "${common[@]}" --resume --train.lr=1e6 --checkpoint.every_steps=1 || rc=$?
  [ $rc -eq 3 ] || { cat bad.log; fail "lr=1e6: exit status $rc, wanted 3 (data error)"; }
  re="error: data loss: non-finite (loss \\(-?nan\\)|gradient of [0-9a-z_]+/[a-z]+) at step [0-9]+ \\(epoch 0, learning rate 1e\\+06\\) \\[key=train.on_nonfinite\\] hint: lower train.lr"
  grep -E -q "$re" bad.log || { cat bad.log; fail "no line naming the non-finite step"; }
  grep -E "$re" bad.log | head -1
  [ "$(md5sum run/checkpoints/ckpt-000000004.h5)" = "$sum" ] || fail "ckpt 4 changed"
  # The checkpoints of the diverged run are finite (else they would have been refused) but
  # useless; the one from before it still loads.
  train 2 again.log "${common[@]}" --train.max_steps=4 --output again \
    --checkpoint.warm_start=run/checkpoints/ckpt-000000004.h5 ||
    { cat again.log; fail "a warm start from ckpt 4 failed"; }
  grep -q "warm start: weights from run/checkpoints/ckpt-000000004.h5" again.log ||
    { cat again.log; fail "no warm-start line"; }
  rc=0
  train 2 skip.log "${common[@]}" --train.lr=1e6 --train.max_steps=40 --output skip \
    --train.on_nonfinite=skip_step --train.max_skipped_steps=3 || rc=$?
  [ $rc -eq 3 ] || { cat skip.log; fail "skip_step at lr=1e6: exit status $rc, wanted 3"; }
  grep -q "4 steps in a row skipped (train.max_skipped_steps = 3)" skip.log ||
    { cat skip.log; fail "skip_step did not stop after 3 skips in a row"; }
  ;;
uneven)
  # 1000 records in 7 shards (142 or 143 each). Per-rank batch 48, 2 epochs.
  convert 7 1000 data/fm
  for np in 2 4; do
    train $np uneven.np$np.log --data.files='data/fm-*.tfrecord' --data.shard_policy=file \
      --train.batch_size=48 --train.epochs=2 --output run$np ||
      { cat uneven.np$np.log; fail "np $np failed"; }
    steps=$($py -c "import json,sys; print(json.load(open('run$np/summary.json'))['steps'])")
    agreed=$(sed -n 's/.*ranks agree on \([0-9]*\) steps per epoch.*/\1/p' uneven.np$np.log)
    [ -n "$agreed" ] || { cat uneven.np$np.log; fail "np $np: no 'ranks agree' line"; }
    [ "$steps" -eq $((2 * agreed)) ] || fail "np $np: $steps steps, wanted 2 x $agreed"
    echo "np $np: ranks agree on $agreed steps per epoch; $steps steps run"
  done
  ;;
left_out)
  # Issue 27.5: 7 shards of 142-143 records over 3 ranks under shard_policy = file give the
  # ranks 3, 2 and 2 files: 9, 6 and 6 batches of 48, so 3 of 21 batches per epoch are never
  # trained on. The count is logged (a warning: over 5%), in metrics.jsonl at each epoch's end
  # and in summary.json.
  convert 7 1000 data/fm
  train 3 left_out.log --data.files='data/fm-*.tfrecord' --data.shard_policy=file \
    --data.shuffle_files=false --train.batch_size=48 --train.epochs=2 --output run ||
    { cat left_out.log; fail "training failed"; }
  grep -q "W.*ranks agree on 6 steps per epoch .*: 3 of 21 batches (up to 144 records, 14.3%) are left out of every epoch.*shard_policy = record" left_out.log ||
    { cat left_out.log; fail "no warning with the left-out count"; }
  $py - <<'PY'
import json
s = json.load(open("run/summary.json"))
assert s["batches_left_out_per_epoch"] == 3 and s["batches_per_epoch"] == 21, s
ends = [l for l in map(json.loads, open("run/metrics.jsonl")) if "batches_left_out" in l]
assert [l["step"] for l in ends] == [6, 12] and all(l["batches_left_out"] == 3 for l in ends), ends
PY
  ;;
grad_log)
  # Issue 27.6: the gradient line says what really ran: buckets hold whole parameters (the
  # largest is bigger than a tiny dist.bucket_mb), and mpi / recursive doubling / one-node
  # hierarchical send float32 whatever dist.wire asks; ring applies it.
  convert 2 400 data/fm
  for algo in mpi recursive_doubling hierarchical ring; do
    train 2 $algo.log --data.files='data/fm-*.tfrecord' --train.max_steps=2 --output run-$algo \
      --dist.allreduce=$algo --dist.wire=bf16 --dist.bucket_mb=0.01 ||
      { cat $algo.log; fail "$algo failed"; }
    line=$(grep "gradients: " $algo.log) || { cat $algo.log; fail "$algo: no gradients line"; }
    echo "$line" | grep -q "floats in 2 bucket(s), the largest 0.194 MiB (dist.bucket_mb = 0.01," ||
      fail "$algo: bucket sizes not as built: $line"
    want="wire float32 (dist.wire = bf16 applies to ring and to hierarchical across nodes only)"
    [ $algo = ring ] && want="all-reduce ring, wire bf16$"
    echo "$line" | grep -q "$want" || fail "$algo: wire not as sent: $line"
  done
  ;;
empty_shard)
  # Issue 27.7: file sharding that gives a rank an empty file (or no file) is named as such,
  # with the fix, once and before training (exit 2); it said "too few records for 3 ranks".
  convert 2 1200 data/fm
  : >data/fm-zz.tfrecord
  rc=0
  # --log.level=warn: no resolved-configuration table on rank 0's stdout while rank 2 writes
  # its error; mpiexec can forward a burst of one in the middle of the other's line (seen once
  # in a CI run under load: the line split, the grep below failed).
  train 3 empty.log --data.files='data/fm-*.tfrecord' --data.shard_policy=file \
    --data.shuffle_files=false --output run_e --log.level=warn || rc=$?
  [ $rc -eq 2 ] || { cat empty.log; fail "exit $rc, wanted 2"; }
  [ "$(grep -c 'error: ' empty.log)" -eq 1 ] || { cat empty.log; fail "not one error line"; }
  grep -q "^\[rank 2\] error: invalid argument: rank 2 has no training batch: shard_policy = file gives it data/fm-zz.tfrecord (0 records), 0 records, fewer than one batch of 64 .*hint: shard_policy = record (or auto)" empty.log ||
    { cat empty.log; fail "the error does not name the empty file and the fix"; }
  rm data/fm-zz.tfrecord
  rc=0
  train 3 none.log --data.files='data/fm-*.tfrecord' --data.shard_policy=file --output run_n \
    --log.level=warn || rc=$?
  [ $rc -eq 2 ] || { cat none.log; fail "exit $rc, wanted 2 (no file for rank 2)"; }
  grep -q "rank 2 has no training batch: shard_policy = file gives it no file (2 files for 3 ranks)" none.log ||
    { cat none.log; fail "the error does not say rank 2 has no file"; }
  ;;
bigger_batch)
  # Issue 27.11, the README's condition: one file (or files whose record counts are multiples of
  # P, read one after another), data.shard_policy = record, no shuffle, a model without
  # randomness. Then global step k holds the same records at P ranks x batch B as at one rank x
  # batch P*B, and the parameters agree to float rounding (2e-5).
  convert 1 768 data/one
  for np in 1 2 4; do
    run_train $np bb$np.log --data.files='data/one-*.tfrecord' --eval.files= \
      --model.spec='flatten, dense:32, relu, dense:10' --data.shard_policy=record \
      --data.shuffle_buffer=0 --train.batch_size=$((32 / np)) --train.epochs=1 \
      --train.max_steps=12 --train.warmup_steps=0 --train.optimizer=sgd --train.lr=0.05 \
      --output run$np || { cat bb$np.log; fail "np $np failed"; }
  done
  $py - <<'PY' || fail "parameters differ"
import glob
import h5py
import numpy as np
def params(run):
    path = sorted(glob.glob(run + "/checkpoints/ckpt-*.h5"))[-1]
    with h5py.File(path, "r") as f:
        out = {}
        f["params"].visititems(lambda n, d: out.__setitem__(n, d[()]) if isinstance(d, h5py.Dataset) else None)
        return out
one = params("run1")
for np_ in (2, 4):
    other = params("run%d" % np_)
    assert other.keys() == one.keys()
    worst = max(float(np.max(np.abs(one[k] - other[k]))) for k in one)
    print("np %d: max |difference| %.3g" % (np_, worst))
    assert worst < 2e-5, worst
PY
  ;;
*) fail "unknown mode" ;;
esac
echo "train_runs.sh $mode: ok"
