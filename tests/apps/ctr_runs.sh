#!/usr/bin/env bash
# Click-through models end to end (issue 51), under mpiexec, on a small table from
# scripts/make_ctr.py (the same columns as configs/ctr_wide_deep.ini, smaller hash buckets):
#   train  shardflow-train on 2 ranks, data-parallel, Adagrad: the feature columns assemble the
#          CSV (log1p counts, hashed categories, a cross, a list of tags) for a wide-and-deep
#          model (an embedding bag and an MLP, plus a linear model of the ids); the final evaluation reports the exact AUC (log, metrics.jsonl, summary,
#          TensorBoard's scalar) above chance; shardflow-predict on the evaluation CSV writes
#          probabilities whose AUC (computed here by counting pairs) equals the trainer's, which
#          gathered its scores from both ranks. The same model with its tables split over two
#          parameter servers (4 ranks, dist.ps_tables = sparse, synchronous) ends with an AUC,
#          and its checkpoint, written by the chief and both servers, is an ordinary one:
#          shardflow-predict reads it and its predictions' AUC equals the trainer's, and a second
#          epoch resumes from it on one server (3 ranks).
#   bad    an embedbag table smaller than the id space, and a list longer than its slots
#          without :truncate: exit non-zero with one line naming the layer, sample and value,
#          or the feature, file and record; sparse tables over the one-sided transport: one line
#          naming dist.ps_transport.
#   ctr_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
$py "$src/scripts/make_ctr.py" --out data --train-rows 4000 --eval-rows 1000 --cardinality 300 \
  --tags-max 4 >make_ctr.log || fail "make_ctr.py: $(cat make_ctr.log)"
cols="label:int64, $(for k in $(seq 1 13); do printf 'i%d:float32=0, ' "$k"; done)"
cols+="$(for k in $(seq 1 26); do printf 'c%d:string=, ' "$k"; done)tags:string="
assemble="$(for k in $(seq 1 13); do printf 'i%d:log1p, ' "$k"; done)"
assemble+="$(for k in $(seq 1 26); do printf 'c%d:hash=400, ' "$k"; done)"
assemble+="c1*c2:hash=400, tags:ids=4:hash=400"
# 28 id entries of 400 buckets each.
space=$((28 * 400))
cat >ctr.ini <<EOF
[data]
files = data/ctr-train.csv
format = csv
csv_columns = $cols
assemble = $assemble
shard_policy = record
shuffle_buffer = 4000
seed = 1
[eval]
files = data/ctr-eval.csv
format = csv
csv_columns = $cols
assemble = $assemble
[model]
spec = embedbag:$space:8:13:27+1x4:mean, dense:32, relu, dense:2, wide:$space:2:13:31
input_shape = 44
input_feature = input
label_feature = label
seed = 42
[train]
epochs = 2
batch_size = 64
batch_semantics = per_rank
optimizer = adagrad
lr = 0.05
threads = 1
EOF
train() {  # train NP OUT LOG ARGS...
  local np=$1 out=$2 log=$3
  shift 3
  timeout -k 5 100 "${mpi[@]}" -np "$np" "$bin/shardflow-train" --config ctr.ini --output "$out" \
    --no-progress "$@" >"$log" 2>&1
}
case "$mode" in
train)
  train 2 dp dp.log --log.tensorboard=true || fail "train: $(tail -5 dp.log)"
  auc=$(sed -nE 's/.*final: eval loss [0-9.]+, accuracy [0-9.]+, AUC ([0-9.]+).*/\1/p' dp.log)
  [ -n "$auc" ] || fail "no final AUC: $(grep final dp.log)"
  $py - "$auc" <<'PY' || fail "AUC in metrics.jsonl / summary.json"
import json, sys
auc = float(sys.argv[1])
lines = [json.loads(l) for l in open("dp/metrics.jsonl") if "eval_auc" in l]
assert lines and abs(lines[-1]["eval_auc"] - auc) < 1e-6, (lines[-1:], auc)
summary = json.load(open("dp/summary.json"))
assert abs(summary["test_auc"] - auc) < 1e-6, summary.get("test_auc")
# Chance is 0.5; the rule's best is about 0.8; a model that learned anything clears 0.6.
assert auc > 0.6, auc
PY
  grep -q "test AUC" dp.log || fail "the report has no AUC line"
  grep -q epoch_auc dp/tb/validation/events.out.tfevents.* || fail "no epoch_auc in TensorBoard"
  timeout -k 5 60 "$bin/shardflow-predict" --config ctr.ini --checkpoint dp/checkpoints \
    --input data/ctr-eval.csv --output preds.csv >predict.log 2>&1 ||
    fail "predict: $(tail -3 predict.log)"
  $py - "$auc" <<'PY' || fail "the AUC of the predictions differs from the trainer's"
import csv, sys
labels = [int(r["label"]) for r in csv.DictReader(open("data/ctr-eval.csv"))]
rows = list(csv.DictReader(open("preds.csv")))
assert len(rows) == len(labels) == 1000, (len(rows), len(labels))
scores = [float(r["p1"]) for r in sorted(rows, key=lambda r: int(r["id"]))]
pos = [s for s, y in zip(scores, labels) if y == 1]
neg = [s for s, y in zip(scores, labels) if y == 0]
wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
auc = wins / (len(pos) * len(neg))
# The trainer ranks logit differences, predict writes rounded probabilities: ties may differ.
assert abs(auc - float(sys.argv[1])) < 2e-3, (auc, sys.argv[1])
PY
  ps=(--dist.strategy=parameter_server --dist.max_staleness=0)
  train 4 ps ps.log "${ps[@]}" --dist.ps_ranks=2 --train.epochs=1 ||
    fail "parameter server: $(tail -5 ps.log)"
  grep -q "holds 11200 rows of 2 sparse table(s)" ps.log || fail "no sparse tables: $(grep server ps.log)"
  auc=$(sed -nE 's/.*final: eval loss [0-9.]+, accuracy [0-9.]+, AUC ([0-9.]+).*/\1/p' ps.log)
  [ -n "$auc" ] || fail "parameter server: no final AUC: $(grep final ps.log)"
  timeout -k 5 60 "$bin/shardflow-predict" --config ctr.ini --checkpoint ps/checkpoints \
    --input data/ctr-eval.csv --output ps-preds.csv >ps-predict.log 2>&1 ||
    fail "predict from the servers' checkpoint: $(tail -3 ps-predict.log)"
  $py - "$auc" <<'PY' || fail "predictions from the servers' checkpoint miss the trainer's AUC"
import csv, sys
labels = [int(r["label"]) for r in csv.DictReader(open("data/ctr-eval.csv"))]
rows = sorted(csv.DictReader(open("ps-preds.csv")), key=lambda r: int(r["id"]))
scores = [float(r["p1"]) for r in rows]
pos = [s for s, y in zip(scores, labels) if y == 1]
neg = [s for s, y in zip(scores, labels) if y == 0]
auc = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
assert abs(auc - float(sys.argv[1])) < 2e-3, (auc, sys.argv[1])
PY
  train 3 ps ps2.log "${ps[@]}" --dist.ps_ranks=1 --train.epochs=2 --resume ||
    fail "resume on one server: $(tail -5 ps2.log)"
  grep -q "resuming from .*ckpt-[0-9]*.h5 at step" ps2.log || fail "no resume: $(grep -i resum ps2.log)"
  grep -q "holds 22400 rows of 2 sparse table(s)" ps2.log || fail "one server: $(grep server ps2.log)"
  grep -qE "final: eval loss [0-9.]+, accuracy [0-9.]+, AUC [0-9.]+" ps2.log ||
    fail "resumed: no final AUC: $(grep final ps2.log)"
  ;;
bad)
  rc=0
  train 2 small small.log "--model.spec=embedbag:1000:8:13:27+1x4, dense:2" || rc=$?
  [ "$rc" -ne 0 ] || fail "a table smaller than the id space trained"
  grep -qE "embedbag:1000:8:13:27\+1x4: sample [0-9]+ holds [0-9.]+ in slot [0-9]+ .*expected -1 or an id in \[0, 1000\)" small.log ||
    fail "small table: $(tail -3 small.log)"
  rc=0
  train 2 long long.log "--data.assemble=${assemble/tags:ids=4/tags:ids=2}" \
    "--eval.assemble=${assemble/tags:ids=4/tags:ids=2}" --model.input_shape=42 \
    "--model.spec=embedbag:$space:8:13:27+1x2, dense:2" || rc=$?
  [ "$rc" -ne 0 ] || fail "lists longer than their slots trained"
  grep -qE "assemble: 'tags' holds [34] ids, more than ids=2 \(add :truncate to keep the first 2\).*file=.*ctr-train.csv.*record=" long.log ||
    fail "long list: $(tail -3 long.log)"
  rc=0
  train 3 rma rma.log --dist.strategy=parameter_server --dist.ps_transport=rma || rc=$?
  [ "$rc" -ne 0 ] || fail "sparse tables over rma trained"
  grep -qE "error: invalid argument: dist.ps_tables = sparse .*not dist.ps_transport = rma.*\[key=dist.ps_transport\]" rma.log ||
    fail "rma: $(grep -m1 error rma.log)"
  ;;
*) fail "unknown mode" ;;
esac
echo "ctr_runs.sh $mode: ok"
