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
#            pipeline stages, each rank's measured peak memory below the unsplit model's state.
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
# The unsplit model's state alone is 281 MiB; every stage, runtime included, stays below it.
assert max(rss) < 281, rss
PY
  ;;
*) fail "unknown mode" ;;
esac
echo "model_parallel_runs.sh $mode: ok"
