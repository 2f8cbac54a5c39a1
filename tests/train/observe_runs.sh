#!/usr/bin/env bash
# Watching a run (issue 17): TensorBoard event files and straggler attribution, end to end.
# Prints "observe_runs.sh MODE: ok" last when every check passed.
#   observe_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   tensorboard  2 ranks, 2 epochs with evaluation, metrics every 5 steps, histograms every 10,
#           a checkpoint every 25 steps; rank 1 is killed at step 32 (after steps 30-32 were
#           logged), and --resume continues from step 25. TensorBoard's own reader (PyPI
#           `tensorboard`, in a virtual environment created once beside WORK_DIR) must load
#           OUTPUT/tb with values equal to metrics.jsonl's and no step logged twice
#           (tensorboard_check.py). Exit 77 (skipped, with a message) when the package index
#           cannot be reached.
#   straggler_compute, straggler_input  2 ranks, rank 1 slowed by SHARDFLOW_TEST_FAULT
#           slow:1:25 (a sleep before each step) or slow_input:1:25 (before each batch): the
#           report and summary.json name rank 1 as last in >= 80% of steps, by >= 15 ms, with
#           the cause compute or input; their shards are alike, so the report does not blame them.
#   straggler_shard  2 ranks with a deliberately uneven shard (data.shard_policy = file over a
#           400- and an 800-record file: rank 1 reads the 800) and rank 1's input slowed as in
#           straggler_input: the report and summary.json add that rank 1's shard's files are 2.0x
#           larger, and summary.json has both ranks' shard bytes and records.
#   stall   2 ranks, rank 1 stalls 1.5 s before its batch of step 30 (SHARDFLOW_TEST_FAULT
#           stall:1:30), log.stall_min_seconds = 0.5: rank 1 logs its input wait with the queue
#           depths (the queues full: the wait is not the pipeline's), rank 0 logs the all-reduce
#           that rank 1 had not joined; the input stall once, and the run completes.
#   trace   2 ranks with log.trace = true and dist.overlap = false (each step's all-reduce runs
#           in the main thread's allreduce_wait span, so in true time every rank's span of a step
#           ends after every rank's span began): OUTPUT/trace.json, merged at the end, and
#           `shardflow-trace merge OUTPUT --out FILE` are valid JSON with both ranks on rank 0's
#           clock, and the spans of each step overlap within the measured clock error; every
#           rank has each kind of span: input (and its queue counters, and the spans of the input
#           pipeline's own threads), forward and backward with a span per layer inside them, each
#           gradient bucket's all-reduce, checkpoint writes.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

common=(--data.files='data/fm-*.tfrecord' --train.batch_size=32 --model.spec='flatten, dense:32, relu, dense:10')

case "$mode" in
tensorboard)
  venv="$(dirname "$work")/tensorboard-venv"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tensorboard" 2>/dev/null; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" || { echo "SKIPPED: cannot create a virtual environment"; exit 77; }
    if ! timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check tensorboard; then
      echo "****************************************************************"
      echo "SKIPPED: pip could not install 'tensorboard' from the Python package index;"
      echo "the check with TensorBoard's own reader did NOT run."
      echo "****************************************************************"
      exit 77
    fi
  fi
  convert 2 1200 data/fm
  # 1200 records / 2 ranks / batch 32 = 19 steps per epoch; 2 epochs = 38 steps.
  args=("${common[@]}" --eval.files='data/fm-*.tfrecord' --train.epochs=2 --train.log_every=5
        --log.histogram_every=10 --checkpoint.every_steps=25 --output run)
  rc=0
  SHARDFLOW_TEST_FAULT=kill:1:32 run_train 2 a.log "${args[@]}" || rc=$?
  [ "$rc" -ne 0 ] || { cat a.log; fail "the killed run exited 0"; }
  grep -q '"step":30[,}]' run/metrics.jsonl || { cat a.log; fail "step 30 was not logged before the kill"; }
  run_train 2 b.log "${args[@]}" --resume || { cat b.log; fail "--resume failed"; }
  grep -q "dropped .* TensorBoard events past it" b.log || { cat b.log; fail "no line on the dropped events"; }
  "$venv/bin/python" "$here/tensorboard_check.py" run 10 || fail "TensorBoard's reader disagrees"
  ;;
straggler_compute | straggler_input)
  convert 2 1200 data/fm
  kind=slow cause=compute
  [ "$mode" = straggler_input ] && kind=slow_input cause=input
  SHARDFLOW_TEST_FAULT=$kind:1:25 run_train 2 a.log "${common[@]}" --eval.files= --train.epochs=2 --output run ||
    { cat a.log; fail "the run failed"; }
  grep -q "^straggler *rank 1 was last to the all-reduce in .*, $cause-bound" a.log ||
    { cat a.log; fail "the report does not name rank 1, $cause-bound"; }
  if grep -q "its shard" a.log; then cat a.log; fail "equal shards were blamed"; fi
  $py - run/summary.json "$cause" <<'PY' || fail "summary.json's straggler is wrong"
import json, sys
s = json.load(open(sys.argv[1]))["straggler"]
ok = s["rank"] == 1 and s["clear"] and s["cause"] == sys.argv[2] and s["last_fraction"] >= 0.8 and s["margin_ms"] >= 15
print(("ok   " if ok else "FAIL ") + json.dumps(s))
sys.exit(0 if ok else 1)
PY
  ;;
straggler_shard)
  convert 1 400 data/fm_a
  convert 1 800 data/fm_b
  SHARDFLOW_TEST_FAULT=slow_input:1:25 run_train 2 a.log "${common[@]}" --data.files='data/fm_*.tfrecord' \
    --data.shard_policy=file --data.shuffle_files=false --eval.files= --train.epochs=3 --output run ||
    { cat a.log; fail "the run failed"; }
  grep -q "^straggler *rank 1 was last to the all-reduce in .*, input-bound (.*): its shard's files are 2\.0x larger (.*, 800 records; the other ranks' median .*, 400 records)" a.log ||
    { cat a.log; fail "the report does not blame rank 1's larger shard"; }
  $py - run/summary.json <<'PY' || fail "summary.json's straggler lacks the shards"
import json, sys
s = json.load(open(sys.argv[1]))["straggler"]
sh = s.get("shards", [])
ok = (s["rank"] == 1 and s["cause"] == "input" and s.get("why", "").startswith("its shard's files are 2.0x larger")
      and [x["records"] for x in sh] == [400, 800] and 1.9 <= sh[1]["bytes"] / sh[0]["bytes"] <= 2.1)
print(("ok   " if ok else "FAIL ") + json.dumps(s))
sys.exit(0 if ok else 1)
PY
  ;;
trace)
  convert 2 1200 data/fm
  run_train 2 a.log "${common[@]}" --eval.files= --train.epochs=2 --log.trace=true --dist.overlap=false \
    --output run || { cat a.log; fail "the run failed"; }
  grep -q "trace: run/trace.json (every rank on rank 0's clock" a.log || fail "no merged trace line"
  "$bin/shardflow-trace" merge run --out again.json >merge.log 2>&1 || { cat merge.log; fail "shardflow-trace merge failed"; }
  grep -q "^merged 2 rank traces (.* events) into again.json; clock: mpi ping-pong against rank 0, error <= " merge.log ||
    { cat merge.log; fail "unexpected shardflow-trace output"; }
  # The README's exit codes: 2 when there is nothing to merge, 3 for a damaged trace.
  rc=0; "$bin/shardflow-trace" merge no_such_run >nf.log 2>&1 || rc=$?
  [ $rc -eq 2 ] || { cat nf.log; fail "merge of a missing run: exit $rc, wanted 2"; }
  mkdir -p damaged && echo '{"no": "events"}' >damaged/trace.rank0.json
  rc=0; "$bin/shardflow-trace" merge damaged >dl.log 2>&1 || rc=$?
  [ $rc -eq 3 ] || { cat dl.log; fail "merge of a damaged trace: exit $rc, wanted 3"; }
  for f in run/trace.json again.json; do
    $py - "$f" <<'PY' || fail "$f: the ranks' all-reduce spans do not line up"
import collections, json, sys
doc = json.load(open(sys.argv[1]))
err = doc["otherData"]["clock_error_us"]
spans = collections.defaultdict(list)
for e in doc["traceEvents"]:
    if e.get("ph") == "X" and e.get("name") == "allreduce_wait":
        spans[e["pid"]].append((e["ts"], e["ts"] + e["dur"]))
if sorted(spans) != [0, 1] or len(spans[0]) != len(spans[1]) or not spans[0]:
    print("FAIL ranks %s, spans %s" % (sorted(spans), [len(v) for v in spans.values()])); sys.exit(1)
worst = max(max(s for s, _ in step) - min(e for _, e in step) for step in zip(spans[0], spans[1]))
print("%s: %d steps, clock error %.3f us, worst gap %.3f us" % (sys.argv[1], len(spans[0]), err, worst))
sys.exit(0 if worst <= err else 1)
PY
  done
  $py - run/trace.json <<'PY' || fail "the merged trace lacks a kind of span"
import collections, json, re, sys
doc = json.load(open(sys.argv[1]))
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
for rank in (0, 1):
    events = [e for e in doc["traceEvents"] if e.get("pid") == rank]
    spans = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            spans[e["name"]].append(e)
    counters = {e["name"] for e in events if e.get("ph") == "C"}
    def inside(parent, child):
        return any(c["tid"] == p["tid"] and p["ts"] <= c["ts"] and c["ts"] + c["dur"] <= p["ts"] + p["dur"]
                   for p in spans[parent] for c in spans[child])
    layers = [n for n in spans if re.fullmatch(r"[0-9]{2}_[a-z]+", n)]
    pipeline = [n for n, v in spans.items() if any(threads.get((rank, e["tid"]), "").startswith("input ") for e in v)]
    checks = {
        "input": bool(spans["input"]),
        "queue counters": any(n.startswith("queue ") for n in counters),
        "input pipeline threads": bool(pipeline),
        "forward per layer": bool(layers) and all(inside("forward", n) for n in layers),
        "backward per layer": bool(layers) and all(inside("backward", n) for n in layers),
        "all-reduce buckets": any(re.fullmatch(r"allreduce_bucket [0-9]+", n) for n in spans),
        "checkpoint": bool(spans["checkpoint"]),
    }
    missing = [k for k, ok in checks.items() if not ok]
    print("rank %d: layers %s, pipeline spans %s%s" % (rank, layers, sorted(pipeline), ", MISSING " + str(missing) if missing else ""))
    if missing:
        sys.exit(1)
PY
  ;;
stall)
  convert 2 1200 data/fm
  # 10 steps per epoch; the median is known after 16 steps; rank 1 stalls 1.5 s at step 30.
  SHARDFLOW_TEST_FAULT=stall:1:30 run_train 2 a.log "${common[@]}" --train.batch_size=64 \
    --eval.files= --train.epochs=4 --log.stall_min_seconds=0.5 --output run ||
    { cat a.log; fail "the run failed"; }
  grep -q "W .*stall inspector: rank 1, step 30 has waited [0-9.]* s for its batch (.*x the median step of .*); the input queues are not empty (prefetch holds a batch)" a.log ||
    { cat a.log; fail "no input stall line for rank 1 at step 30"; }
  grep -q "^\[rank 0\] stall inspector: collective #[0-9]* .* has run [0-9.]* s (the stall threshold is 0\.50 s, the watchdog ends the job at 300 s); ranks that had not joined it: \[1\]" a.log ||
    { cat a.log; fail "no collective stall line naming rank 1"; }
  ! grep "stall inspector: collective" a.log | grep -q ": \[\]" ||
    { grep "stall inspector" a.log; fail "the collective stall line lists empty rank lists"; }
  [ "$(grep -c "stall inspector: rank" a.log)" -eq 1 ] || { cat a.log; fail "more than one input stall line"; }
  ;;
*) fail "unknown mode" ;;
esac
echo "observe_runs.sh $mode: ok"
