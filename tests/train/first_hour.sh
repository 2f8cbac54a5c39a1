#!/usr/bin/env bash
# Process-level tests of what a new user meets in the first hour with shardflow-train (issue 24),
# on small Fashion-MNIST shards made by shardflow-convert. Prints "first_hour.sh MODE: ok" last
# when every check passed.
#   first_hour.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   final_eval   2 epochs with an evaluation set: metrics.jsonl has an evaluation line for each
#                epoch, the last one marked final (the last epoch's used to be missing).
#   resume_done  --resume of a finished run says it is complete, exits 0 and leaves
#                summary.json and metrics.jsonl as they were.
#   resume_mismatch  --resume with a checkpoint of another model: one error line, whole, exit 2,
#                no MPI_ABORT banner (every rank used to print it, then abort).
#   check        --check counts files, records and steps per rank, estimates memory, exits 0 and
#                writes nothing; a pattern with no files is the usual one-line error.
#   checkpoints  with the default cadence a checkpoint is written at every epoch end; --resume
#                with no checkpoint is one error line; --resume=auto starts fresh.
#   early_stopping  train.early_stopping = eval_accuracy:1 with a learning rate too small to
#                change a prediction: the second epoch's evaluation does not improve, the run
#                stops after it (of 4 epochs) with OUTPUT/best.h5 = the first epoch's checkpoint;
#                each epoch logs its training loss; without an evaluation set the key is one
#                error line (exit 2).
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# train NP LOG ARGS...: 2 epochs of a small model on 600 records (600 / 2 ranks / 32 = 10 steps
# per epoch), evaluated on the same records; its exit status is returned.
train() {
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" --data.files='data/fm-*.tfrecord' --eval.files='data/fm-*.tfrecord' \
    --train.epochs=2 --train.batch_size=32 --train.warmup_steps=2 \
    --model.spec='flatten, dense:32, relu, dense:10' "$@"
}

evals() {  # evals RUN: the metrics.jsonl evaluation lines as "epoch:step[:final]"
  $py - "$1/metrics.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if "eval_loss" in m:
        print(f"{m['epoch']}:{m['step']}" + (":final" if m.get("final") else ""))
PY
}

convert 2 600 data/fm
case "$mode" in
final_eval)
  train 2 a.log --output run || { cat a.log; fail "training failed"; }
  got=$(evals run | tr '\n' ' ')
  [ "$got" = "0:10 1:20:final " ] || fail "evaluation lines '$got', wanted '0:10 1:20:final '"
  ;;
resume_done)
  train 2 a.log --output run || { cat a.log; fail "training failed"; }
  before=$(cat run/summary.json run/metrics.jsonl | md5sum)
  train 2 b.log --output run --resume || { cat b.log; fail "resume of a finished run failed"; }
  grep -q "the run in run is complete; nothing changed" b.log || { cat b.log; fail "no 'complete' line"; }
  [ "$(cat run/summary.json run/metrics.jsonl | md5sum)" = "$before" ] ||
    fail "summary.json or metrics.jsonl changed"
  # As it says: raise train.epochs to go on (the iterator state used to be refused then).
  train 2 c.log --output run --resume --train.epochs=3 || { cat c.log; fail "resume with more epochs failed"; }
  grep -q "resuming from run/checkpoints/ckpt-000000020.h5 at step 20" c.log || { cat c.log; fail "no resume line"; }
  [ "$(evals run | tail -n 1)" = "2:30:final" ] || fail "the third epoch did not run"
  ;;
checkpoints)
  train 2 a.log --output run --checkpoint.keep_last=0 || { cat a.log; fail "training failed"; }
  got=$(cd run/checkpoints && ls | tr '\n' ' ')
  [ "$got" = "ckpt-000000010.h5 ckpt-000000020.h5 " ] || fail "checkpoints '$got', wanted steps 10, 20"
  rc=0
  train 2 b.log --output fresh --resume || rc=$?
  [ $rc -ne 0 ] || { cat b.log; fail "--resume with no checkpoint exited 0"; }
  n=$(grep -c "error: " b.log || true)
  m=$(grep -c "error: not found: --resume: no checkpoint to resume from \[file=fresh/checkpoints\]" b.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat b.log; fail "wanted one error line naming the folder"; }
  train 2 c.log --output fresh --resume=auto || { cat c.log; fail "--resume=auto failed"; }
  grep -q -- "--resume=auto: no checkpoint in fresh/checkpoints; starting fresh" c.log ||
    { cat c.log; fail "no 'starting fresh' line"; }
  ;;
resume_mismatch)
  train 2 a.log --output run --train.epochs=1 || { cat a.log; fail "training failed"; }
  rc=0
  train 2 b.log --output run --resume --model.spec='flatten, dense:16, relu, dense:10' || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "exit status $rc, wanted 2"; }
  n=$(grep -c "error: " b.log || true)
  [ "$n" -eq 1 ] || { cat b.log; fail "$n error lines, wanted 1"; }
  # Written whole, not spliced into a line of the config table (stdout and stderr share b.log).
  n=$(grep -c "^\[rank 0\] error: invalid argument: parameter " b.log || true)
  [ "$n" -eq 1 ] || { cat b.log; fail "the error line does not start a line"; }
  ! grep -q "MPI_ABORT" b.log || { cat b.log; fail "the job was aborted"; }
  ;;
early_stopping)
  train 1 a.log --output run --train.epochs=4 --train.lr=1e-12 --train.min_lr=0 --train.warmup_steps=0 \
    --train.early_stopping=eval_accuracy:1 || { cat a.log; fail "training failed"; }
  grep -q "early stopping after epoch 2: eval_accuracy has not improved for 1 evaluation(s); the best, .* after step 19, is run/best.h5" a.log ||
    { cat a.log; fail "no early stopping line"; }
  grep -q "^\[r0 I [0-9.]*\] epoch 1: train loss [0-9.]*, accuracy " a.log || { cat a.log; fail "no epoch line"; }
  [ "$(evals run | tr '\n' ' ')" = "0:19 1:38 1:38:final " ] || { evals run; fail "evaluations"; }
  cmp run/best.h5 run/checkpoints/ckpt-000000019.h5 || fail "best.h5 is not the first epoch's checkpoint"
  rc=0
  train 1 b.log --output run2 --eval.files= --train.early_stopping=eval_loss:2 || rc=$?
  [ $rc -eq 2 ] && grep -q "train.early_stopping = 'eval_loss:2': it watches the evaluation" b.log ||
    { cat b.log; fail "early stopping without evaluation: exit $rc"; }
  ;;
check)
  train 2 a.log --output run --check || { cat a.log; fail "--check failed"; }
  grep -q "^check: 2 training files" a.log || { cat a.log; fail "no file line"; }
  [ "$(grep -c -E '^check: +[01] +[01] +1 +300 +10 +replica [01]' a.log)" -eq 2 ] ||
    { cat a.log; fail "wanted a line per rank: 300 records, 10 batches"; }
  grep -q "^check: 10 steps per epoch .* x 2 epochs = 20 steps$" a.log || { cat a.log; fail "no step line"; }
  grep -q "^check: model 25450 parameters; per rank about" a.log || { cat a.log; fail "no memory line"; }
  [ ! -e run ] || fail "--check wrote the output folder"
  rc=0
  train 2 b.log --output run --check --data.files='data/none-*.tfrecord' || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "--check with no files: exit $rc, wanted 2"; }
  ;;
*) fail "unknown mode" ;;
esac
echo "first_hour.sh $mode: ok"
