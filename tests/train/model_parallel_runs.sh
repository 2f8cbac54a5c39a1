#!/usr/bin/env bash
# Process-level tests of model parallelism in shardflow-train (issue 13), on small Fashion-MNIST
# shards made by shardflow-convert. Prints "model_parallel_runs.sh MODE: ok" last when every
# check passed.
#   model_parallel_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   errors   grids and plans that cannot work are one line each, exit 2, nothing aborted: a rank
#            count that does not factor, boundaries out of range or leaving a stage without
#            parameters, 1f1b with fewer micro-batches than stages, boundaries for one stage, a
#            layer that cannot split T ways, a row-parallel layer on a whole input.
#            Every line of the merged output is whole (issue 24, item 3).
#   memory   configs/fmnist_wide_mlp.ini (281 MiB of model state with Adam) is refused on one
#            rank by train.max_memory_mb = 192 before anything is allocated, and trains on 4
#            pipeline stages, the largest rank's measured peak memory above the runtime's (the
#            smallest rank's) well below the unsplit model's state.
#   train    a 2-stage pipeline of the mlp preset learns (accuracy), reports its grid, bubble
#            and per-rank memory in summary.json, and writes a checkpoint.
#   resume   a checkpoint written by 2 stages resumes on 1 rank, and one written on 1 rank on 2
#            stages, to the same losses as the run through (the whole model's file either way).
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# train NP LOG ARGS...: the mlp preset on 600 records; its exit status is returned.
train() {
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" --data.files='data/fm-*.tfrecord' --eval.files='data/fm-*.tfrecord' \
    --train.epochs=2 --train.batch_size=32 "$@"
}

# expect_usage_error LOG PATTERN NP ARGS...: exit 2, one error line matching PATTERN, no abort,
# every line whole.
expect_usage_error() {
  local log=$1 pattern=$2 np=$3
  shift 3
  local rc=0
  train "$np" "$log" --output run "$@" || rc=$?
  [ $rc -eq 2 ] || { cat "$log"; fail "$*: exit $rc, wanted 2"; }
  [ "$(grep -c "error: " "$log")" -eq 1 ] || { cat "$log"; fail "$*: wanted one error line"; }
  grep -q -E "^\[rank 0\] error: invalid argument: $pattern" "$log" ||
    { cat "$log"; fail "$*: no error line matching '$pattern'"; }
  ! grep -q "MPI_ABORT" "$log" || { cat "$log"; fail "$*: the job was aborted"; }
  # Whole lines only: a log line or an error starts its line, never inside a table row.
  bad=$(grep -c -E '^.+\[(rank [0-9]+\]|r[0-9]+ [IWE] )' "$log" || true)
  [ "$bad" -eq 0 ] || { cat "$log"; fail "$*: $bad spliced lines"; }
}

convert 2 600 data/fm
case "$mode" in
errors)
  expect_usage_error a.log "3 ranks do not factor into data replicas x pipeline_stages 2 x tensor_parallel 1 \[key=dist.pipeline_stages\]" \
    3 --dist.pipeline_stages=2
  expect_usage_error b.log "stage boundaries: 9 is out of range .*\[key=dist.stage_boundaries\]" \
    2 --dist.pipeline_stages=2 --dist.stage_boundaries=9
  expect_usage_error c.log "stage boundaries: stage 0 \(layers 0..0\) holds no layer with parameters" \
    2 --dist.pipeline_stages=2 --dist.stage_boundaries=1
  expect_usage_error d.log "1f1b needs at least as many micro-batches as stages: micro_batches 2 < pipeline_stages 4" \
    4 --dist.pipeline_stages=4 --dist.micro_batches=2 --model.spec='flatten, dense:8, dense:8, dense:8, dense:10'
  expect_usage_error e.log "stage boundaries given for a single stage" 2 --dist.stage_boundaries=2
  expect_usage_error f.log "the model has 3 layers with parameters, too few for 4 pipeline stages" \
    4 --dist.pipeline_stages=4
  expect_usage_error g.log "layer 01_dense cannot split its 512 units 3 ways \(T = 3 must divide 512\) \[key=dist.tensor_parallel\]" \
    3 --dist.tensor_parallel=3
  expect_usage_error h.log "layer 01_dense \('dense:16:row'\) on input \[784\] is row-parallel but its input is whole" \
    2 --dist.tensor_parallel=2 --model.spec='flatten, dense:16:row, dense:10'
  ;;
memory)
  rc=0
  timeout -k 5 60 "${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$src/configs/fmnist_wide_mlp.ini" \
    --data.files='data/fm-*.tfrecord' --eval.files= --no-progress --output one >a.log 2>&1 || rc=$?
  [ $rc -eq 2 ] || { cat a.log; fail "one rank: exit $rc, wanted 2"; }
  grep -q "error: invalid argument: the whole model (a replica on every rank) needs 281 MiB per rank for 18411530 parameters, their gradients and adam state, over train.max_memory_mb = 192" a.log ||
    { cat a.log; fail "one rank: no memory error line"; }
  timeout -k 5 100 "${mpi[@]}" -np 4 "$bin/shardflow-train" --config "$src/configs/fmnist_wide_mlp.ini" \
    --data.files='data/fm-*.tfrecord' --eval.files= --no-progress --train.threads=1 \
    --dist.pipeline_stages=4 --train.max_steps=4 --train.batch_size=16 --output four >b.log 2>&1 ||
    { cat b.log; fail "4 stages did not train"; }
  $py - four/summary.json <<'PY' || { cat b.log; fail "summary"; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["steps"] == 4, s["steps"]
assert s["grid"].startswith("1 replica x 4 stages x 1 tensor way"), s["grid"]
rss = s["peak_rss_mib"]
assert len(rss) == 4, rss
# The last stage holds 20 K parameters: its peak is the runtime's (MPI, input pipeline). The
# largest stage's memory above it stays well below the unsplit model's state (281 MiB); it holds
# one 2048x4096 layer (128 MiB with Adam).
assert max(rss) - min(rss) < 200, rss
PY
  ;;
train)
  # Two stages, 1f1b, 4 micro-batches: learns, reports, checkpoints; predicting from its
  # checkpoint on 2 stages, on 2 tensor ways and on 1 rank gives the same predictions.
  train 2 a.log --output run --dist.pipeline_stages=2 --dist.micro_batches=4 ||
    { cat a.log; fail "training failed"; }
  grep -q "grid: 1 replica x 2 stages x 1 tensor way = 2 ranks; schedule 1f1b, 4 micro-batches per step" a.log ||
    { cat a.log; fail "no grid line"; }
  grep -q "stages (balanced by FLOPs): stage 0: layers 0-1" a.log || { cat a.log; fail "no split line"; }
  $py - run/summary.json <<'PY' || { cat a.log; fail "summary"; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["strategy"] == "model_parallel", s
assert s["grid"] == "1 replica x 2 stages x 1 tensor way, 1f1b, 4 micro-batches", s["grid"]
f = s["strategy_figures"]
assert 0 < f["bubble_fraction"] < 1 and abs(f["ideal_bubble_fraction"] - 0.2) < 1e-9, f
assert f["max_micro_batches_in_flight"] == 2, f
assert len(s["peak_rss_mib"]) == 2 and s["samples"] > 0, s
assert s["test_accuracy"] > 0.5, s["test_accuracy"]
PY
  ls run/checkpoints/ckpt-*.h5 >/dev/null || fail "no checkpoint"
  for grid in "1 1 1" "2 2 1" "2 1 2"; do
    read -r np s t <<<"$grid"
    timeout -k 5 60 "${mpi[@]}" -np "$np" "$bin/shardflow-predict" --config "$src/configs/fmnist_mlp.ini" \
      --checkpoint run/checkpoints --input 'data/fm-*.tfrecord' --output "p$s$t.h5" \
      --dist.pipeline_stages="$s" --dist.tensor_parallel="$t" --train.threads=1 >"p$s$t.log" 2>&1 ||
      { cat "p$s$t.log"; fail "predict on $s stages x $t ways failed"; }
  done
  grep -q "^predicted 600 records on 2 ranks (1 replica x 2 stages x 1 tensor way) in" p21.log ||
    { cat p21.log; fail "no pipelined predict line"; }
  $py - <<'PY' || fail "predictions differ between grids"
import h5py, numpy as np
ref = h5py.File("p11.h5", "r")
for name in ("p21.h5", "p12.h5"):
    f = h5py.File(name, "r")
    assert np.array_equal(f["ids"][:], ref["ids"][:]), name
    assert np.array_equal(f["classes"][:], ref["classes"][:]), name
    assert np.abs(f["probabilities"][:] - ref["probabilities"][:]).max() < 1e-5, name
PY
  ;;
resume)
  # losses FILE: "step loss" per metrics line (log_every 1: every step).
  losses() { $py -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if "loss" in m: print(m["step"], repr(m["loss"]))' "$1"; }
  same() {  # same A B TOLERANCE: the runs' step losses agree (0: bit for bit)
    $py - "$1" "$2" "$3" <<'PY'
import sys
a = [l.split() for l in open(sys.argv[1])]
b = [l.split() for l in open(sys.argv[2])]
tol = float(sys.argv[3])
assert [x[0] for x in a] == [x[0] for x in b], (a, b)
for (s, x), (_, y) in zip(a, b):
    x, y = float(x), float(y)
    assert abs(x - y) <= tol * max(1.0, abs(x)), f"step {s}: {x} vs {y}"
PY
  }
  common=(--train.log_every=1 --checkpoint.keep_last=0 --checkpoint.every_epochs=0)
  two=(--dist.pipeline_stages=2 --dist.micro_batches=2)
  # Run through on 2 stages; stopped at step 10 and resumed on the same grid: bit for bit.
  train 2 a.log --output through "${common[@]}" "${two[@]}" || { cat a.log; fail "run through"; }
  train 2 b.log --output split "${common[@]}" "${two[@]}" --train.max_steps=10 ||
    { cat b.log; fail "first half"; }
  train 2 c.log --output split "${common[@]}" "${two[@]}" --resume || { cat c.log; fail "resume"; }
  losses through/metrics.jsonl >through.txt
  losses split/metrics.jsonl >split.txt
  same through.txt split.txt 0 || fail "resume on the same grid is not bit-identical"
  # Written on 2 stages, resumed on 1 rank; written on 1 rank, resumed on 2 tensor ways: the
  # whole model's file either way, the same losses to rounding.
  train 2 d.log --output to_one "${common[@]}" "${two[@]}" --train.max_steps=10 ||
    { cat d.log; fail "2 stages, first half"; }
  train 1 e.log --output to_one "${common[@]}" --resume || { cat e.log; fail "resume on 1 rank"; }
  grep -q "resuming from to_one/checkpoints/ckpt-000000010.h5 at step 10" e.log || { cat e.log; fail "no resume line"; }
  losses to_one/metrics.jsonl >to_one.txt
  same through.txt to_one.txt 1e-4 || fail "2 stages -> 1 rank: losses differ"
  train 1 f.log --output to_tp "${common[@]}" --train.max_steps=10 || { cat f.log; fail "1 rank, first half"; }
  train 2 g.log --output to_tp "${common[@]}" --dist.tensor_parallel=2 --resume ||
    { cat g.log; fail "resume on 2 tensor ways"; }
  losses to_tp/metrics.jsonl >to_tp.txt
  same through.txt to_tp.txt 1e-4 || fail "1 rank -> 2 ways: losses differ"
  ;;
*) fail "unknown mode" ;;
esac
echo "model_parallel_runs.sh $mode: ok"
