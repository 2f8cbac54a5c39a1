#!/usr/bin/env bash
# Dynamic sharding (issue 14, dist.sharding = dynamic): asynchronous parameter-server workers
# claim the epoch's batches as they go. Every record of every epoch is trained exactly once,
# counted by id from the workers' logs (SHARDFLOW_TEST_ROW_IDS, check_row_ids.py), and a slow
# worker takes fewer batches. Prints "dynamic_runs.sh MODE: ok" last.
#   dynamic_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# 250 records in 3 files, 8 records a claim: 32 batches an epoch (the last of 2 records), 2 epochs;
# with W workers ceil(32 / W) nominal steps an epoch. The server is the last rank.
# MODE:
#   one, two, three  1, 2 and 3 workers (+ 1 server): each record once per epoch, every nominal
#            step seen, the run's steps and epochs in summary.json; --check says the plan.
#   straggler  2 workers, worker 1 slowed by 40 ms a batch: worker 0 trains most batches, and
#            still every record exactly once.
#   stop     2 workers stopped by a signal inside epoch 0 (exit 75), resumed: every record once.
#   elastic  2 workers stopped inside epoch 0, resumed on 3 workers; with checkpoints every 5
#            nominal steps (more fences) on the way.
#   hdf5     2 workers on the same records converted to one HDF5 file (rows claimed by id).
#   refuse   dynamic sharding with max_staleness 0, with data_parallel, with data.on_corrupt =
#            skip, and a static resume of a dynamic checkpoint: exit 2 naming dist.sharding.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

records=250
common=(--data.files='data/dy-*.tfrecord' --data.shuffle_buffer=64 --train.batch_size=8
        --train.batch_semantics=per_rank --train.epochs=2 --train.log_every=1
        --checkpoint.keep_last=0 --data.parallel_reads=1 --data.parallel_calls=1 --eval.files=
        --dist.strategy=parameter_server --dist.sharding=dynamic --output run)

ok_run() {  # NP LOG [ARGS...]: a run that finishes
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" "${common[@]}" "$@" || { cat "$log"; fail "$log: run failed"; }
}

stop_run() {  # NP SIGNAL_STEP LOG [ARGS...]: a run a stop signal ends with exit 75
  local np=$1 at=$2 log=$3 rc=0
  shift 3
  SHARDFLOW_TEST_FAULT=term:all:$at run_train "$np" "$log" "${common[@]}" "$@" || rc=$?
  [ $rc -eq 75 ] || { cat "$log"; fail "$log: exit status $rc, wanted 75"; }
}

check() {  # STEPS PREFIX...: every record once per epoch, nominal steps 0..STEPS-1
  $py "$here/check_row_ids.py" $records 2 "$1" 0 "${@:2}" || fail "records trained do not add up"
  grep -q '"epochs": 2' run/summary.json || fail "summary.json does not count 2 epochs"
}

refused() {  # LOG WHAT: exit status 2 and a line naming dist.sharding
  local rc=$1 log=$2
  [ "$rc" -eq 2 ] || { cat "$log"; fail "$log: exit status $rc, wanted 2"; }
  grep -q "dist.sharding" "$log" || { cat "$log"; fail "$log: no line naming dist.sharding"; }
}

convert 3 $records data/dy
case "$mode" in
one | two | three)
  workers=$([ "$mode" = one ] && echo 1 || { [ "$mode" = two ] && echo 2 || echo 3; })
  steps=$(((32 + workers - 1) / workers))
  SHARDFLOW_TEST_ROW_IDS=ids ok_run $((workers + 1)) a.log
  grep -q "dynamic sharding: 250 records an epoch in 32 batches of 8, claimed by $workers workers as they go ($steps nominal steps an epoch)" a.log ||
    { cat a.log; fail "no dynamic sharding line"; }
  check $((2 * steps)) ids
  grep -q "\"steps\": $((2 * steps))" run/summary.json || fail "summary.json steps"
  run_train $((workers + 1)) c.log "${common[@]}" --output check --check ||
    { cat c.log; fail "--check failed"; }
  grep -q "check: dynamic sharding: 250 records an epoch in 32 batches of 8, claimed by $workers workers as they go: $steps nominal steps per epoch x 2 epochs = $((2 * steps)) steps" c.log ||
    { cat c.log; fail "no dynamic sharding line from --check"; }
  ;;
straggler)
  SHARDFLOW_TEST_FAULT=slow:1:40 SHARDFLOW_TEST_ROW_IDS=ids ok_run 3 a.log
  check 32 ids
  fast=$(wc -l <ids.rank0) slow=$(wc -l <ids.rank1)
  [ $((fast + slow)) -eq 64 ] || fail "$fast + $slow batches, wanted 64"
  [ "$fast" -ge $((3 * slow)) ] || fail "worker 0 took $fast batches, the slowed worker $slow"
  ;;
stop)
  SHARDFLOW_TEST_ROW_IDS=ids_a stop_run 3 4 a.log
  grep -q "stopping after step" a.log || { cat a.log; fail "no stop line"; }
  SHARDFLOW_TEST_ROW_IDS=ids_b ok_run 3 b.log --resume
  grep -q "resumed at batch" b.log || { cat b.log; fail "no resume line"; }
  check 32 ids_a ids_b
  ;;
elastic)
  common+=(--checkpoint.every_steps=5)
  SHARDFLOW_TEST_ROW_IDS=ids_a stop_run 3 6 a.log
  SHARDFLOW_TEST_ROW_IDS=ids_b ok_run 4 b.log --resume
  grep -q "claimed by 3 workers as they go (11 nominal steps an epoch; resumed at batch" b.log ||
    { cat b.log; fail "no resume line on 3 workers"; }
  # Nominal steps are numbered by 2 workers before the resume and 3 after: only the records
  # are checked (each once per epoch, none missing).
  $py "$here/check_row_ids.py" $records 2 -1 -1 ids_a ids_b || fail "a record trained twice"
  $py - <<'PY' || fail "records missing"
import collections, glob
seen = collections.defaultdict(set)
for name in glob.glob("ids_*.rank*"):
    for line in open(name):
        epoch, _, ids = line.split()
        seen[int(epoch)].update(ids.split(","))
assert sorted(seen) == [0, 1] and all(len(s) == 250 for s in seen.values()), \
    {e: len(s) for e, s in seen.items()}
PY
  ;;
hdf5)
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx \
    --input.split=test --input.limit=$records --output.format=hdf5 --output.path=data/dy.h5 \
    >convert.log 2>&1 || { cat convert.log; fail "shardflow-convert to HDF5 failed"; }
  common[0]=--data.files=data/dy.h5
  SHARDFLOW_TEST_ROW_IDS=ids ok_run 3 a.log --data.format=hdf5 \
    --data.features=images:uint8:28x28x1,labels:int64:scalar --model.input_feature=images \
    --model.label_feature=labels
  grep -q "dynamic sharding: 250 records an epoch in 32 batches of 8, claimed by 2 workers" a.log ||
    { cat a.log; fail "no dynamic sharding line"; }
  check 32 ids
  ;;
refuse)
  rc=0
  run_train 3 a.log "${common[@]}" --dist.max_staleness=0 || rc=$?
  refused $rc a.log
  rc=0
  run_train 2 b.log "${common[@]}" --dist.strategy=data_parallel || rc=$?
  refused $rc b.log
  stop_run 3 4 c.log
  rc=0
  run_train 3 d.log "${common[@]}" --dist.sharding=static --resume || rc=$?
  refused $rc d.log
  rc=0
  run_train 3 e.log "${common[@]}" --data.on_corrupt=skip --output skip || rc=$?
  refused $rc e.log
  ;;
*) fail "unknown mode" ;;
esac
echo "$script $mode: ok"
