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
#           the cause compute or input.
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
  SHARDFLOW_TEST_FAULT=$kind:1:25 run_train 2 a.log "${common[@]}" --eval.files= --output run ||
    { cat a.log; fail "the run failed"; }
  grep -q "^straggler *rank 1 was last to the all-reduce in .*, $cause-bound" a.log ||
    { cat a.log; fail "the report does not name rank 1, $cause-bound"; }
  $py - run/summary.json "$cause" <<'PY' || fail "summary.json's straggler is wrong"
import json, sys
s = json.load(open(sys.argv[1]))["straggler"]
ok = s["rank"] == 1 and s["cause"] == sys.argv[2] and s["last_fraction"] >= 0.8 and s["margin_ms"] >= 15
print(("ok   " if ok else "FAIL ") + json.dumps(s))
sys.exit(0 if ok else 1)
PY
  ;;
*) fail "unknown mode" ;;
esac
echo "observe_runs.sh $mode: ok"
