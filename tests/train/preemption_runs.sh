#!/usr/bin/env bash
# Preemption and time limits (issue 16): a stop signal ends shardflow-train after a step every rank
# agrees on, with a checkpoint and exit status 75, and --resume finishes the run with the
# parameters of a run never stopped. Prints "preemption_runs.sh MODE: ok" last when every check
# passed.
#   preemption_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   all     every rank gets SIGTERM twice at the start of step 25 (0-based; as scancel, then an
#           impatient second one): the ranks agree after the next step, a checkpoint at step 27, a "stopped" line in metrics.jsonl, exit 75; resumed, the run
#           matches an uninterrupted one bit for bit (compare_runs.py).
#   peer    only rank 1 gets SIGUSR1 (step 10): rank 0 stops at the same step (12), says the signal
#           came from a peer; resumed, bit-identical again. Then with a metrics line every 5
#           steps (the stop falls inside one): the resumed run's lines, the first included, and
#           its epoch means equal the uninterrupted run's (the running sums are checkpointed).
#   mpirun  SIGUSR1 to mpiexec itself while a slowed run trains (mpiexec forwards it to every
#           rank): exit 75 from mpiexec, a checkpoint, and the resumed run bit-identical.
#   ctrl_c  Ctrl-C. One process (no mpirun): SIGINT stops it after the step with a checkpoint,
#           exit 130, and --resume finishes. Under mpirun through scripts/keep_work.sh, with
#           a checkpoint that takes 2.5 s (longer than mpirun's 1 s + 1 s from its SIGTERM to
#           SIGKILL): SIGINT to the terminal's process group ends with exit 75, a checkpoint,
#           and the resumed run bit-identical.
#   ps      asynchronous parameter servers, every rank signalled at step 10: server 0 picks the
#           step all workers stop after, they checkpoint there; the servers end too; exit 75; --resume finishes the run, and
#           a second --resume finds it complete (servers included: nothing waits).
#   ckpt_kill  rank 0 killed (SIGKILL) at each phase of the second checkpoint (step 10): half
#           written, closed, synced, renamed, before pruning; every time --resume finds an
#           intact checkpoint (step 5 before the rename, step 10 after) and the run ends
#           bit-identical to one never killed.
#   timed   checkpoint.every_seconds writes checkpoints by the clock; with every_minutes too: exit 2.
#   ps_peer asynchronous parameter servers, only worker 1 signalled (SIGUSR1 at step 10), with a
#           checkpoint every 7 steps (collectives at fixed steps the stop must not cut across):
#           worker 0 hears of it from server 0, both stop, exit 75, a checkpoint; --resume
#           finishes; over both transports.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

convert 3 1200 data/fm
# 1200 records / 2 ranks / batch 32 = 19 steps per epoch; 2 epochs = 38 steps; Adam and a cosine
# schedule, so that the learning rate and the optimizer state differ at every step.
common=(--data.files='data/fm-*.tfrecord' --data.shuffle_buffer=500 --train.batch_size=32
        --train.epochs=2 --train.warmup_steps=3 --train.log_every=1 --train.optimizer=adam
        --train.lr=0.002 --checkpoint.keep_last=0 --data.parallel_reads=1 --data.parallel_calls=1
        --eval.files=)

stopped_run() {  # LOG EXPECTED_STEP ARGS...: a run a signal stops; checks status and checkpoint
  local log=$1 at=$2 rc=0
  shift 2
  run_train 2 "$log" "${common[@]}" --output run_b "$@" || rc=$?
  [ $rc -eq 75 ] || { cat "$log"; fail "exit status $rc, wanted 75"; }
  [ -f "run_b/checkpoints/ckpt-$(printf %09d "$at").h5" ] || { cat "$log"; fail "no checkpoint at step $at"; }
  grep -q "^stopped by .* after step $at: checkpoint written in run_b/checkpoints; the job exits 75" \
    "$log" || { cat "$log"; fail "no stop line"; }
  tail -1 run_b/metrics.jsonl | grep -q "\"step\":$at,\"stopped\"" ||
    { tail -3 run_b/metrics.jsonl; fail "no stopped line in metrics.jsonl"; }
}

resume_and_compare() {  # AT
  run_train 2 a.log "${common[@]}" --output run_a || { cat a.log; fail "uninterrupted run failed"; }
  run_train 2 r.log "${common[@]}" --output run_b --resume || { cat r.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-$(printf %09d "$1").h5 at step $1" r.log ||
    { cat r.log; fail "no resume line"; }
  $py "$here/compare_runs.py" run_a run_b 38 || fail "the resumed run differs"
}

case "$mode" in
all)
  SHARDFLOW_TEST_FAULT=term:all:25 stopped_run b.log 27
  grep -q "stop signal (SIGTERM): stopping after step 27 of 38" b.log || { cat b.log; fail "no SIGTERM line"; }
  resume_and_compare 27
  ;;
peer)
  SHARDFLOW_TEST_FAULT=usr1:1:10 stopped_run b.log 12
  grep -q "stop signal (on a peer): stopping after step 12 of 38" b.log ||
    { cat b.log; fail "rank 0 does not say a peer was signalled"; }
  resume_and_compare 12
  rm -rf run_a run_b
  common+=(--train.log_every=5)
  SHARDFLOW_TEST_FAULT=usr1:1:10 stopped_run b.log 12
  run_train 2 a.log "${common[@]}" --output run_a || { cat a.log; fail "uninterrupted run failed"; }
  run_train 2 r.log "${common[@]}" --output run_b --resume || { cat r.log; fail "resume failed"; }
  $py "$here/compare_runs.py" run_a run_b 38 5 || fail "metrics every 5 steps differ after the resume"
  sed -n 's/.*\] \(epoch 2: train loss .*\)/\1/p' a.log >ea.txt
  [ -s ea.txt ] && grep -q -F -f ea.txt r.log || { cat ea.txt; grep "epoch 2" r.log; fail "epoch 2's train loss differs"; }
  ;;
mpirun)
  # 38 steps of >= 150 ms on rank 0: the signal, sent once the first metrics line is written (the
  # ranks' handlers are in place by then, however loaded the machine), lands mid-run.
  rc=0
  SHARDFLOW_TEST_FAULT=slow:0:150 "${mpi[@]}" -np 2 "$bin/shardflow-train" \
    --config "$src/configs/fmnist_mlp.ini" --no-progress --train.threads=1 "${common[@]}" \
    --output run_b >b.log 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    grep -q '"step"' run_b/metrics.jsonl 2>/dev/null && break
    sleep 0.1
  done
  kill -USR1 $pid
  ( sleep 60; kill -9 $pid 2>/dev/null ) & watchdog=$!
  wait $pid || rc=$?
  kill $watchdog 2>/dev/null || true
  [ $rc -eq 75 ] || { cat b.log; fail "mpiexec exit status $rc, wanted 75"; }
  at=$(sed -n 's/^stopped by SIGUSR1 after step \([0-9]*\):.*/\1/p' b.log)
  [ -n "$at" ] || { cat b.log; fail "no stop line"; }
  [ -f "run_b/checkpoints/ckpt-$(printf %09d "$at").h5" ] || fail "no checkpoint at step $at"
  resume_and_compare "$at"
  ;;
ctrl_c)
  common+=(--checkpoint.every_epochs=10)  # only the stop's checkpoint
  until_metrics() {  # DIR: waits for the first metrics line (the handlers are in place by then)
    for _ in $(seq 300); do
      grep -q '"step"' "$1/metrics.jsonl" 2>/dev/null && return 0
      sleep 0.1
    done
  }
  rc=0
  SHARDFLOW_TEST_FAULT=slow:0:100 "$bin/shardflow-train" --config "$src/configs/fmnist_mlp.ini" \
    --no-progress --train.threads=1 "${common[@]}" --output run_c >c.log 2>&1 &
  pid=$!
  ( sleep 60; kill -9 $pid 2>/dev/null ) & watchdog=$!
  until_metrics run_c
  kill -INT $pid
  wait $pid || rc=$?
  kill $watchdog 2>/dev/null || true
  [ $rc -eq 130 ] || { cat c.log; fail "one process: exit status $rc after SIGINT, wanted 130"; }
  at=$(sed -n 's/^stopped by SIGINT after step \([0-9]*\):.*the job exits 130.*/\1/p' c.log)
  [ -n "$at" ] || { cat c.log; fail "one process: no stop line for SIGINT"; }
  [ -f "run_c/checkpoints/ckpt-$(printf %09d "$at").h5" ] || fail "no checkpoint at step $at"
  run_train 1 rc.log "${common[@]}" --output run_c --resume || { cat rc.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-$(printf %09d "$at").h5 at step $at" rc.log ||
    { cat rc.log; fail "one process: no resume line"; }
  # Under mpirun: the terminal's Ctrl-C is SIGINT to the foreground process group, here the
  # session keep_work.sh leads (python3 gives it a SIGINT not ignored, as a terminal would: a
  # shell's background job ignores it).
  rc=0
  SHARDFLOW_TEST_FAULT=slow:0:150,slow_checkpoint:0:2500 $py -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' setsid "$src/scripts/keep_work.sh" "${mpi[@]}" -np 2 \
    "$bin/shardflow-train" --config "$src/configs/fmnist_mlp.ini" --no-progress \
    --train.threads=1 "${common[@]}" --output run_b >b.log 2>&1 &
  pid=$!
  ( sleep 60; kill -9 -- -$pid 2>/dev/null ) & watchdog=$!
  until_metrics run_b
  kill -INT -- -$pid
  wait $pid || rc=$?
  kill $watchdog 2>/dev/null || true
  [ $rc -eq 75 ] || { cat b.log; fail "keep_work.sh + mpirun: exit status $rc, wanted 75"; }
  grep -q "keep_work.sh: stopping after the current step" b.log || { cat b.log; fail "no keep_work line"; }
  at=$(sed -n 's/^stopped by SIGUSR1 after step \([0-9]*\):.*/\1/p' b.log)
  [ -n "$at" ] || { cat b.log; fail "no stop line"; }
  [ -f "run_b/checkpoints/ckpt-$(printf %09d "$at").h5" ] || fail "no checkpoint at step $at"
  resume_and_compare "$at"
  ;;
ps)
  rc=0
  SHARDFLOW_TEST_FAULT=term:all:10 run_train 3 b.log "${common[@]}" --output run_b \
    --dist.strategy=parameter_server || rc=$?
  [ $rc -eq 75 ] || { cat b.log; fail "exit status $rc, wanted 75"; }
  at=$(sed -n 's/^stopped by SIGTERM after step \([0-9]*\):.*/\1/p' b.log)
  grep -q "parameter server: a worker got a stop signal; every worker stops after step $at" b.log ||
    { cat b.log; fail "server 0 did not pick the stop step"; }
  [ -f "run_b/checkpoints/ckpt-$(printf %09d "$at").h5" ] || { cat b.log; fail "no checkpoint"; }
  run_train 3 r.log "${common[@]}" --output run_b --resume --dist.strategy=parameter_server ||
    { cat r.log; fail "resume failed"; }
  grep -q "resuming from .*ckpt-$(printf %09d "$at").h5 at step $at" r.log || { cat r.log; fail "no resume line"; }
  $py - run_b/summary.json <<'PY' || fail "summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["steps"] == 38, s["steps"]
PY
  run_train 3 d.log "${common[@]}" --output run_b --resume --dist.strategy=parameter_server ||
    { cat d.log; fail "resuming the finished run failed"; }
  grep -q "^the run in run_b is complete; nothing changed" d.log || { cat d.log; fail "no complete line"; }
  ;;
ps_peer)
  for transport in p2p rma; do
    rm -rf run_b
    rc=0
    SHARDFLOW_TEST_FAULT=usr1:1:10 run_train 3 b.log "${common[@]}" --output run_b \
      --dist.strategy=parameter_server --dist.ps_transport=$transport \
      --checkpoint.every_steps=7 --dist.watchdog_seconds=20 || rc=$?
    [ $rc -eq 75 ] || { cat b.log; fail "$transport: exit status $rc, wanted 75"; }
    at=$(sed -n 's/^stopped by .* after step \([0-9]*\):.*/\1/p' b.log)
    [ -n "$at" ] && [ -f "run_b/checkpoints/ckpt-$(printf %09d "$at").h5" ] ||
      { cat b.log; fail "$transport: no stop line or no checkpoint"; }
    run_train 3 r.log "${common[@]}" --output run_b --resume --dist.strategy=parameter_server \
      --dist.ps_transport=$transport --checkpoint.every_steps=7 || { cat r.log; fail "$transport: resume failed"; }
    grep -q "resuming from .*ckpt-$(printf %09d "$at").h5 at step $at" r.log ||
      { cat r.log; fail "$transport: no resume line"; }
  done
  ;;
ckpt_kill)
  run_train 2 a.log "${common[@]}" --output run_a || { cat a.log; fail "uninterrupted run failed"; }
  for phase in write fsync rename published prune; do
    rm -rf run_b
    rc=0
    SHARDFLOW_TEST_CHECKPOINT_FAULT=$phase:2 run_train 2 b.log "${common[@]}" --output run_b \
      --checkpoint.every_steps=5 --checkpoint.every_epochs=0 || rc=$?
    [ $rc -ne 0 ] || { cat b.log; fail "$phase: exit 0 after rank 0 was killed"; }
    grep -q "SHARDFLOW_TEST_CHECKPOINT_FAULT: SIGKILL at '$phase' of checkpoint 2" b.log ||
      { cat b.log; fail "$phase: the fault was not injected"; }
    case $phase in write|fsync|rename) at=5 ;; *) at=10 ;; esac
    run_train 2 r.log "${common[@]}" --output run_b --resume --checkpoint.every_steps=5 \
      --checkpoint.every_epochs=0 || { cat r.log; fail "$phase: resume failed"; }
    grep -q "resuming from .*ckpt-$(printf %09d $at).h5 at step $at" r.log ||
      { cat r.log; fail "$phase: did not resume from step $at"; }
    $py "$here/compare_runs.py" run_a run_b 38 || fail "$phase: the resumed run differs"
  done
  ;;
timed)
  # checkpoint.every_seconds: a run of ~4 s (rank 0 slowed 100 ms a step, a metrics line every
  # step, where the time is checked) writes checkpoints by the clock; both keys set: exit 2.
  SHARDFLOW_TEST_FAULT=slow:0:100 run_train 2 b.log "${common[@]}" --output run_b \
    --checkpoint.every_epochs=0 --checkpoint.every_seconds=1 || { cat b.log; fail "timed run failed"; }
  n=$(ls run_b/checkpoints/ckpt-*.h5 | wc -l)
  [ "$n" -ge 3 ] || { ls run_b/checkpoints; fail "$n checkpoints in ~4 s at one a second"; }
  rc=0
  run_train 2 c.log "${common[@]}" --output run_c --checkpoint.every_seconds=1 \
    --checkpoint.every_minutes=1 || rc=$?
  [ $rc -eq 2 ] || { cat c.log; fail "both intervals: exit $rc, wanted 2"; }
  grep -q "error: invalid argument: checkpoint.every_minutes and checkpoint.every_seconds are both set" c.log ||
    { cat c.log; fail "no error line for both intervals"; }
  ;;
*) fail "unknown mode" ;;
esac
echo "preemption_runs.sh $mode: ok"
