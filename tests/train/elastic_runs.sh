#!/usr/bin/env bash
# Elastic resume (issue 16): a run stopped mid-epoch (a stop signal: checkpoint, exit 75) and
# resumed with --resume on another rank count continues the same epoch: every record of every
# epoch is trained at most once, and only the records the resume says it left out (fewer than one
# per rank, in its last step) are missing. Records are counted by id from the ranks' logs
# (SHARDFLOW_TEST_ROW_IDS, check_row_ids.py). Prints "elastic_runs.sh MODE: ok" last.
#   elastic_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# 240 records in 3 files, shard_policy = record, global batch 24 (batch_semantics = global): 10
# steps per epoch on any of 1..4 ranks; 3 epochs = 30 steps. A signal at the start of step S
# stops the run after step S+2 (S+2 steps done).
# MODE:
#   shrink   4 ranks stopped at 13 (epoch 1, 3 steps in), resumed on 2 ranks.
#   grow     2 ranks stopped at 13, resumed on 3.
#   one_to_four  1 rank stopped at 13, resumed on 4.
#   twice    4 ranks stopped at 13; resumed on 2 and stopped again at 16, inside the remainder of
#            epoch 1; resumed on 3 (elastic from the remainder); and the records still add up.
#   remainder_same  4 -> 2 stopped at 16 inside the remainder, resumed on 2 again (same count:
#            the remainder's record list comes back from the checkpoint).
#   boundary 4 ranks stopped at 20 (an epoch end), resumed on 2: no remainder, epoch 2 as a
#            fresh 2-rank epoch.
#   per_rank 250 records, per-rank batch 8 (batch_semantics = per_rank): 3 ranks stopped at 13,
#            resumed on 2: the learning rate is scaled by 2/3 (logged, in metrics.jsonl), and
#            what is left out is what the resume said.
#   memory_cache, file_cache  shrink and grow with data.cache = memory (the cache's contents are
#            in each rank's saved state) and a cache file per rank (the old ranks' files are read
#            by the new ranks that replay them).
#   ps_shrink, ps_grow  asynchronous parameter servers with static sharding (server ranks last):
#            3 workers and 1 server stopped mid-epoch 1, resumed on 2 workers and 1 server
#            (ps_shrink); 2 workers and 1 server resumed on 3 workers and 2 servers (ps_grow: the
#            servers' slices change too); the workers' saved inputs are dealt as above.
#   hdf5     shrink (4 -> 2) on the same records converted to one HDF5 file: rows are found
#            again by their index.
#   uneven   one file of 240 records; 4 ranks stopped at 13, resumed on 5: the global batch 24
#            does not divide, so ranks 0-3 take 5 rows and rank 4 takes 4 (each step weighs the
#            gradients by rows); the remainder is dealt by those batches and epoch 2 is a fresh
#            5-rank epoch whose record shares follow the batches (10 steps, every record once).
#   csv      shrink (4 -> 2) on the same records as one CSV file (pixels as 784 columns): lines
#            are found again by their byte offsets.
#   refuse   global batch 3 on 4 ranks: exit 2 naming train.batch_size (no row for one rank);
#            5 over 3 dynamically sharded workers (equal batches needed): the same.
#   mp_shrink, dp_to_mp, mp_uneven  model parallel (2 pipeline stages a replica): 2 replicas
#            (4 ranks) resumed as 1 (2 ranks); 3 data-parallel ranks resumed as 2 replicas of 2
#            stages; uneven replica batches (25 over 2) resumed as 1 replica. The whole
#            model's checkpoint loads on any grid; the replicas' inputs are dealt as above.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

records=240
common=(--data.files='data/el-*.tfrecord' --data.shard_policy=record --data.shuffle_buffer=64
        --train.batch_size=24 --train.batch_semantics=global --train.epochs=3 --train.log_every=1
        --checkpoint.keep_last=0 --data.parallel_reads=1 --data.parallel_calls=1 --eval.files=
        --output run)

stop_run() {  # NP SIGNAL_STEP LOG [ARGS...]: a run a stop signal ends with exit 75
  local np=$1 at=$2 log=$3 rc=0
  shift 3
  SHARDFLOW_TEST_FAULT=term:all:$at run_train "$np" "$log" "${common[@]}" "$@" || rc=$?
  [ $rc -eq 75 ] || { cat "$log"; fail "$log: exit status $rc, wanted 75"; }
}

finish_run() {  # NP LOG [ARGS...]: a resumed run that finishes
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" "${common[@]}" --resume "$@" || { cat "$log"; fail "$log: resume failed"; }
}

stopped_then_resumed() {  # FROM STOP TO PATTERN: stopped after STOP+2 steps on FROM ranks
  # (ids_a), resumed on TO (ids_b, b.log), whose log must match "elastic resume: PATTERN".
  # ARGS for the two runs: the arrays from_args and to_args (may be empty).
  SHARDFLOW_TEST_ROW_IDS=ids_a stop_run "$1" "$2" a.log "${from_args[@]}"
  SHARDFLOW_TEST_ROW_IDS=ids_b finish_run "$3" b.log "${to_args[@]}"
  grep -q "elastic resume: $4" b.log || { cat b.log; fail "no elastic resume line"; }
}
from_args=() to_args=()

left_out() {  # LOG...: the records the elastic resumes left out
  local n=0 k
  for log in "$@"; do
    k=$(sed -n 's/.*(\([0-9]*\) left out: fewer than one per rank).*/\1/p' "$log")
    n=$((n + ${k:-0}))
  done
  echo $n
}

check() {  # RECORDS STEPS LEFT_OUT PREFIX...
  $py "$here/check_row_ids.py" "$1" 3 "$2" "$3" "${@:4}" || fail "records trained do not add up"
  grep -q '"epochs": 3' run/summary.json || fail "summary.json does not count 3 epochs"
}

elastic() {  # FROM TO: stopped at 13 on FROM ranks, finished on TO
  convert 3 $records data/el
  stopped_then_resumed "$1" 11 "$2" "$1 -> $2 ranks at step 13, per-rank batch $((24 / $1)) -> $((24 / $2)) (global 24 -> 24); epoch 1 continues with the 168 records its ranks had left, in 7 steps"
  check $records 30 "$(left_out b.log)" ids_a ids_b
}

ps_elastic() {  # FROM TO SERVERS: FROM workers + 1 server stopped in epoch 1, finished on TO + SERVERS
  common+=(--dist.strategy=parameter_server)
  convert 3 $records data/el
  SHARDFLOW_TEST_ROW_IDS=ids_a stop_run $(($1 + 1)) 11 a.log --dist.ps_ranks=1
  SHARDFLOW_TEST_ROW_IDS=ids_b finish_run $(($2 + $3)) b.log --dist.ps_ranks=$3
  grep -q "parameter server: $2 worker(s) .*, $3 server(s)" b.log || { cat b.log; fail "roles"; }
  grep -q "elastic resume: $1 -> $2 ranks at step 1[0-9], per-rank batch $((24 / $1)) -> $((24 / $2)) (global 24 -> 24); epoch 1 continues with the [0-9]* records its ranks had left" b.log ||
    { cat b.log; fail "no elastic resume line"; }
  check $records 30 "$(left_out b.log)" ids_a ids_b
}

case "$mode" in
shrink) elastic 4 2 ;;
ps_shrink) ps_elastic 3 2 1 ;;
hdf5)
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx \
    --input.split=test --input.limit=$records --output.format=hdf5 --output.path=data/el.h5 \
    >convert.log 2>&1 || { cat convert.log; fail "shardflow-convert to HDF5 failed"; }
  common[0]=--data.files=data/el.h5
  common+=(--data.format=hdf5 --data.features=images:uint8:28x28x1,labels:int64:scalar
           --model.input_feature=images --model.label_feature=labels)
  stopped_then_resumed 4 11 2 "4 -> 2 ranks at step 13, per-rank batch 6 -> 12 (global 24 -> 24); epoch 1 continues with the 168 records its ranks had left, in 7 steps"
  check $records 30 "$(left_out b.log)" ids_a ids_b
  ;;
ps_grow) ps_elastic 2 3 2 ;;
memory_cache)
  common+=(--data.cache=memory)
  elastic 4 2 ;;
file_cache)
  common+=(--data.cache=cache/el)
  mkdir -p cache
  elastic 2 3 ;;
grow) elastic 2 3 ;;
one_to_four) elastic 1 4 ;;
twice | remainder_same)
  convert 3 $records data/el
  SHARDFLOW_TEST_ROW_IDS=ids_a stop_run 4 11 a.log
  SHARDFLOW_TEST_ROW_IDS=ids_b stop_run 2 14 b.log --resume
  grep -q "epoch 1 continues with the 168 records" b.log || { cat b.log; fail "no elastic resume"; }
  to=3
  [ "$mode" = remainder_same ] && to=2
  SHARDFLOW_TEST_ROW_IDS=ids_c finish_run $to c.log
  if [ "$mode" = twice ]; then
    # 168 - 3 steps x 24 = 96 records left of epoch 1, over 3 ranks: 4 steps.
    grep -q "elastic resume: 2 -> 3 ranks at step 16, .*epoch 1 continues with the 96 records its ranks had left, in 4 steps" c.log ||
      { cat c.log; fail "no second elastic resume line"; }
  else
    grep -q "elastic resume" c.log && fail "a same-count resume called itself elastic"
    grep -q "resuming from .* at step 16" c.log || { cat c.log; fail "no resume line"; }
  fi
  check $records 30 "$(left_out b.log c.log)" ids_a ids_b ids_c
  ;;
boundary)
  convert 3 $records data/el
  stopped_then_resumed 4 18 2 "4 -> 2 ranks at step 20, .*; at the start of epoch 2"
  check $records 30 0 ids_a ids_b
  ;;
per_rank)
  records=250
  convert 3 $records data/el
  common+=(--train.batch_semantics=per_rank --train.batch_size=8 --train.schedule=constant
           --train.warmup_steps=0)
  stopped_then_resumed 3 11 2 "3 -> 2 ranks at step 13, per-rank batch 8 -> 8 (global 24 -> 16).*learning rate x0.666667"
  # 250 records do not divide over 3 ranks: the equal step counts leave batches out, so only
  # "at most once" is checked here.
  $py "$here/check_row_ids.py" $records 3 0 -1 ids_a ids_b || fail "a record trained twice"
  $py - "$records" <<'PY' || fail "learning rate not scaled"
import json, sys
lines = [json.loads(l) for l in open("run/metrics.jsonl") if '"lr"' in l]
before = [l["lr"] for l in lines if l["step"] <= 13]
after = [l["lr"] for l in lines if l["step"] > 13]
assert before and after, "no lr lines"
assert abs(after[0] / before[-1] - 2 / 3) < 0.02, (before[-1], after[0])
PY
  ;;
uneven)
  convert 1 $records data/el
  stopped_then_resumed 4 11 5 "4 -> 5 ranks at step 13, per-rank batch 6 -> 4..5 (global 24 -> 24); epoch 1 continues with the 168 records its ranks had left, in 7 steps"
  grep -q "batch: 4..5 per rank x 5 ranks = 24 global (global semantics; it does not divide" b.log ||
    { cat b.log; fail "no uneven batch line"; }
  check $records 30 "$(left_out b.log)" ids_a ids_b
  grep -q '"global_batch": 24' run/summary.json || fail "summary.json global batch"
  ;;
csv | jsonl)
  # Lines are found again by their byte offsets (CSV: quoted fields with a line break on the way
  # make a wrong offset show).
  mkdir -p data
  $py - "$records" <<'PY'
import json, random, sys
n = int(sys.argv[1])
rng = random.Random(3)
with open("data/el.csv", "w") as csv, open("data/el.jsonl", "w") as js:
    csv.write('x1,x2,note,label\n')
    for i in range(n):
        x1, x2 = rng.gauss(0, 1), rng.gauss(0, 1)
        label = int(x1 + x2 > 0)
        note = '"two\nlines"' if i % 50 == 7 else "n%d" % i
        csv.write("%.5f,%.5f,%s,%d\n" % (x1, x2, note, label))
        js.write(json.dumps({"x": [x1, x2], "label": label}) + "\n")
PY
  if [ "$mode" = csv ]; then
    common[0]=--data.files=data/el.csv
    common+=(--data.format=csv --data.features= --data.csv_columns=x1:float32,x2:float32,label:int64
             --data.assemble=x1,x2 --model.input_feature=input)
  else
    common[0]=--data.files=data/el.jsonl
    common+=(--data.format=jsonl --data.features= --data.json_schema='x:float32[2],label:int64'
             --model.input_feature=x)
  fi
  common+=(--model.input_shape=2 --model.spec='dense:8, relu, dense:2' --model.label_feature=label)
  stopped_then_resumed 4 11 2 "4 -> 2 ranks at step 13, per-rank batch 6 -> 12 (global 24 -> 24); epoch 1 continues with the 168 records its ranks had left, in 7 steps"
  check $records 30 "$(left_out b.log)" ids_a ids_b
  ;;
refuse)
  convert 3 $records data/el
  rc=0
  run_train 4 b.log "${common[@]}" --train.batch_size=3 || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "exit status $rc, wanted 2"; }
  grep -q "global batch 3 is smaller than 4 replicas.*train.batch_size" b.log ||
    { cat b.log; fail "no batch error"; }
  # Dynamically sharded workers claim equal batches: 5 over 3 workers is refused.
  rc=0
  run_train 4 c.log "${common[@]}" --train.batch_size=5 --dist.strategy=parameter_server \
    --dist.sharding=dynamic || rc=$?
  [ $rc -eq 2 ] || { cat c.log; fail "dynamic sharding: exit status $rc, wanted 2"; }
  grep -q "global batch 5 is not divisible by 3 replicas: dynamically sharded workers claim equal batches.*train.batch_size" c.log ||
    { cat c.log; fail "no dynamic-sharding batch error"; }
  ;;
mp_shrink | dp_to_mp | mp_uneven)
  # Model parallel: 2 pipeline stages per replica. mp_shrink: 4 ranks (2 replicas) stopped at
  # 13, resumed on 2 (1 replica); dp_to_mp: 3 data-parallel ranks resumed as 2 replicas of 2
  # stages; mp_uneven: a batch of 25 over 2 replicas (13 and 12) from the start, resumed on 1.
  convert 3 $records data/el
  mp=(--dist.pipeline_stages=2 --dist.micro_batches=2)
  to_args=("${mp[@]}")
  case $mode in
  mp_shrink) from_args=("${mp[@]}")
    stopped_then_resumed 4 11 2 "2 -> 1 data replicas at step 13, per-rank batch 12 -> 24" ;;
  dp_to_mp) stopped_then_resumed 3 11 4 "3 -> 2 data replicas at step 13, per-rank batch 8 -> 12" ;;
  mp_uneven) from_args=("${mp[@]}") common+=(--train.batch_size=25)
    stopped_then_resumed 4 11 2 "2 -> 1 data replicas at step 13, per-rank batch 12..13 -> 25" ;;
  esac
  if [ "$mode" = mp_uneven ]; then
    # 240 records in batches of 25 leave 15 out of every epoch: at most once is checked.
    $py "$here/check_row_ids.py" $records 3 0 -1 ids_a ids_b || fail "a record trained twice"
  else
    check $records 30 "$(left_out b.log)" ids_a ids_b
  fi
  ;;
*) fail "unknown mode" ;;
esac
echo "$script $mode: ok"
