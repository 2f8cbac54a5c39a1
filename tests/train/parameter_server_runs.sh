#!/usr/bin/env bash
# Process-level tests of parameter-server training in shardflow-train (issue 14), on small
# Fashion-MNIST shards made by shardflow-convert. Prints "parameter_server_runs.sh MODE: ok"
# last when every check passed.
#   parameter_server_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   errors  one line each, exit 2, nothing aborted: ps_ranks leaving no worker, more servers than
#           parameter tensors, a parameter server with pipeline stages, placements that name
#           rank 0 or the wrong number of ranks.
#   train   2 workers + 1 server, asynchronous: learns, reports the roles, the staleness
#           histogram (one count per push) and writes a checkpoint in the data-parallel layout,
#           which data-parallel training resumes on 2 ranks and shardflow-predict reads. Then
#           the server placed on rank 1 (dist.ps_placement=1) and per node: the same figures.
#   kill    a worker killed at step 5 ends the job non-zero within 30 s, servers included, over
#           messages and over one-sided windows.
#   behind  worker 1 stopped for good (SIGSTOP at step 5) under bounded staleness (1): the server
#           holding worker 0's pulls says early who they wait for, and its watchdog ends the job
#           naming worker rank 1 as behind, not the server; over both transports.
#   sync_resume  synchronous (max_staleness 0) and bounded (2) servers, stopped at step 13
#           (mid-epoch) and resumed, over both transports: the resumed run's first pulls are
#           answered (the servers start counting at the resumed step, not 0, which hung) and,
#           synchronous, it ends bit-identical to an uninterrupted run.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

train() {
  local np=$1 log=$2
  shift 2
  # Reads and calls pinned: their automatic values follow the ranks per node, and an iterator state
  # names the pipeline's stages, so resuming on another rank count would refuse it.
  run_train "$np" "$log" --data.files='data/fm-*.tfrecord' --eval.files='data/fm-*.tfrecord' \
    --train.epochs=2 --train.batch_size=32 --data.parallel_calls=1 --data.parallel_reads=1 "$@"
}

expect_usage_error() {  # LOG PATTERN NP ARGS...
  local log=$1 pattern=$2 np=$3
  shift 3
  local rc=0
  train "$np" "$log" --output run --dist.strategy=parameter_server "$@" || rc=$?
  [ $rc -eq 2 ] || { cat "$log"; fail "$*: exit $rc, wanted 2"; }
  [ "$(grep -c "error: " "$log")" -eq 1 ] || { cat "$log"; fail "$*: wanted one error line"; }
  grep -q -E "^\[rank 0\] error: invalid argument: $pattern" "$log" ||
    { cat "$log"; fail "$*: no error line matching '$pattern'"; }
  ! grep -q "MPI_ABORT" "$log" || { cat "$log"; fail "$*: the job was aborted"; }
}

convert 2 600 data/fm
case "$mode" in
errors)
  expect_usage_error a.log "dist.ps_ranks 2 leaves no worker among 2 ranks \[key=dist.ps_ranks\]" \
    2 --dist.ps_ranks=2
  expect_usage_error b.log "3 parameter servers for a model of 2 parameter tensors" \
    4 --dist.ps_ranks=3 --model.spec='flatten, dense:10'
  expect_usage_error c.log "dist.strategy parameter_server does not combine with pipeline stages" \
    2 --dist.pipeline_stages=2
  expect_usage_error d.log "dist.ps_placement: rank 0 is worker 0, the chief, and cannot serve" \
    3 --dist.ps_placement=0
  expect_usage_error e.log "dist.ps_placement lists 1 rank\(s\) for dist.ps_ranks = 2" \
    4 --dist.ps_ranks=2 --dist.ps_placement=2
  ;;
train)
  train 3 a.log --output run --dist.strategy=parameter_server || { cat a.log; fail "training failed"; }
  # dist.ps_transport = auto: one-sided windows when every rank has a core, messages otherwise.
  transport="p2p (messages)"
  [ "$(nproc)" -ge 3 ] && transport="rma (one-sided windows)"
  grep -q "parameter server: 2 worker(s) (ranks 0,1, rank 0 the chief), 1 server(s) (ranks 2); max_staleness unbounded (asynchronous); transport $transport" a.log ||
    { cat a.log; fail "no roles line"; }
  $py - run/summary.json "${transport%% *}" <<'PY' || { cat a.log; fail "summary"; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["strategy"] == "parameter_server", s
assert s["grid"] == "2 workers + 1 server, max_staleness unbounded, " + sys.argv[2], s["grid"]
assert sum(s["staleness_histogram"]) == 2 * s["steps"], (s["staleness_histogram"], s["steps"])
# Asynchronous: the accuracy depends on the order pushes arrive in (chance is 0.1).
assert s["test_accuracy"] > 0.35, s["test_accuracy"]
assert s["samples"] == 2 * 600, s  # every record once per epoch, over the workers
PY
  ls run/checkpoints/ckpt-*.h5 >/dev/null || fail "no checkpoint"
  # The file is data-parallel training's: 2 ranks resume it (a finished run: nothing to do) and
  # continue it for a third epoch; predict reads it.
  train 2 b.log --output run --train.epochs=3 --resume || { cat b.log; fail "data-parallel resume failed"; }
  grep -q "resuming from run/checkpoints/ckpt-" b.log || { cat b.log; fail "no resume line"; }
  timeout -k 5 60 "${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$src/configs/fmnist_mlp.ini" \
    --checkpoint run/checkpoints --input 'data/fm-*.tfrecord' --output p.csv >p.log 2>&1 ||
    { cat p.log; fail "predict failed"; }
  grep -q "^predicted 600 records on 1 rank in" p.log || { cat p.log; fail "no predict line"; }
  # The server in the middle (rank 1) over messages, then one per node (here one node: its
  # highest rank) over one-sided windows.
  for placement in 1 per_node; do
    [ $placement = 1 ] && transport=p2p || transport=rma
    train 3 c.log --output run-$placement --dist.strategy=parameter_server \
      --dist.ps_placement=$placement --dist.ps_transport=$transport ||
      { cat c.log; fail "$placement: training failed"; }
    [ $placement = 1 ] && roles="ranks 0,2, rank 0 the chief), 1 server(s) (ranks 1)" ||
      roles="ranks 0,1, rank 0 the chief), 1 server(s) (ranks 2)"
    grep -q "parameter server: 2 worker(s) ($roles.*; transport $transport" c.log ||
      { cat c.log; fail "$placement: roles"; }
    $py - run-$placement/summary.json <<'PY' || { cat c.log; fail "$placement: summary"; }
import json, sys
s = json.load(open(sys.argv[1]))
assert sum(s["staleness_histogram"]) == 2 * s["steps"], (s["staleness_histogram"], s["steps"])
assert s["test_accuracy"] > 0.35, s["test_accuracy"]
assert s["samples"] == 2 * 600, s
PY
  done
  ;;
sync_resume)
  for transport in p2p rma; do
    for s in 0 2; do
      ps=(--dist.strategy=parameter_server --dist.max_staleness=$s --dist.ps_transport=$transport
        --dist.watchdog_seconds=20)
      train 3 "full.log" --output "full_$transport$s" "${ps[@]}" || { cat full.log; fail "$transport s=$s"; }
      train 3 "cut.log" --output "cut_$transport$s" "${ps[@]}" --train.max_steps=13 ||
        { cat cut.log; fail "$transport s=$s: stopped at step 13"; }
      train 3 "resumed.log" --output "cut_$transport$s" "${ps[@]}" --resume ||
        { cat resumed.log; fail "$transport s=$s: the resumed run"; }
      grep -q "resuming from .* at step 13" resumed.log || { cat resumed.log; fail "not at 13"; }
    done
    $py - "full_${transport}0" "cut_${transport}0" <<'PY' || fail "$transport: the resumed run differs"
import json, sys
a, b = (json.load(open(p + "/summary.json"))["test_loss"] for p in sys.argv[1:3])
print(f"synchronous: test loss uninterrupted {a!r}, stopped at step 13 and resumed {b!r}")
assert a == b
PY
  done
  ;;
kill)
  # A worker that dies ends the job, servers included, with mpiexec's one line about it, over
  # either transport.
  for transport in p2p rma; do
    start=$(date +%s)
    rc=0
    SHARDFLOW_TEST_FAULT=kill:1:5 train 3 a.log --output run-$transport \
      --dist.strategy=parameter_server --dist.ps_transport=$transport \
      --dist.watchdog_seconds=10 || rc=$?
    took=$(( $(date +%s) - start ))
    [ $rc -ne 0 ] || { cat a.log; fail "$transport: exit status 0 after a worker was killed"; }
    grep -q "SHARDFLOW_TEST_FAULT: rank 1 raises SIGKILL at step 5" a.log ||
      { cat a.log; fail "$transport: the fault was not injected"; }
    n=$(grep -E -c "process rank 1 .*exited on signal 9" a.log || true)
    [ "$n" -eq 1 ] || { cat a.log; fail "$transport: $n lines say rank 1 died, wanted 1"; }
    [ $took -le 30 ] || fail "$transport: the job took ${took}s to end"
  done
  ;;
behind)
  for transport in p2p rma; do
    rc=0
    SHARDFLOW_TEST_FAULT=hang:1:5 train 3 a.log --output run-$transport \
      --dist.strategy=parameter_server --dist.ps_transport=$transport --dist.max_staleness=1 \
      --dist.watchdog_seconds=4 || rc=$?
    [ $rc -ne 0 ] || { cat a.log; fail "$transport: exit status 0 with a stopped worker"; }
    grep -q "pulls of worker rank(s) 0 wait for it (dist.max_staleness = 1); the job ends after" \
      a.log || { cat a.log; fail "$transport: no early line on who the pulls wait for"; }
    grep -q "parameter server (rank 2) heard nothing for 4 s: worker rank 1 is behind" a.log ||
      { cat a.log; fail "$transport: the watchdog does not name worker rank 1"; }
    ! grep -q "waited .* for parameter server" a.log ||
      { cat a.log; fail "$transport: a worker blamed the server"; }
  done
  ;;
*) fail "unknown mode" ;;
esac
echo "parameter_server_runs.sh $mode: ok"
