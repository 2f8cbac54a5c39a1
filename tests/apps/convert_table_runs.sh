#!/usr/bin/env bash
# The tabular walk-through as a process-level test (issue 23): scripts/make_table.py writes a
# table (numeric, categorical, quoted and missing values, a label from a known rule with 5% of
# the labels flipped: best accuracy 0.95); shardflow-convert --input.format=table makes shards,
# statistics and vocabularies byte-identical on 1 and 3 ranks (3 chunks of 1 MiB); shardflow-train
# (2 ranks, configs/tabular.ini) learns from the shards, and shardflow-predict on the CSV itself
# must reach the rule's band [0.90, 0.96]; summary.json shows the assembled layout; the table as
# JSON lines converts alike on 1 and 3 ranks; the same training with
# the city column through an embedding:7:4:4 layer (data.assemble = city:index).
#   convert_table_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
mkdir -p data
$py "$src/scripts/make_table.py" --rows 50000 --seed 1 --out data/table-train.csv
$py "$src/scripts/make_table.py" --rows 4000 --seed 2 --out data/table-test.csv
columns=id:int64,x1:float32,x2:float32,x3:float32=0,income:float32,city:string,zone:int64,label:int64
for np in 1 3; do
  mkdir -p np$np
  timeout -k 5 120 "${mpi[@]}" -np $np "$bin/shardflow-convert" --input.format=table \
    --input.files=data/table-train.csv --input.columns=$columns --input.na_values=NA \
    --input.categorical=zone --input.chunk_mb=1 --output.path=np$np/table-train \
    --output.shards=4 >convert.np$np.log 2>&1 || { cat convert.np$np.log; fail "convert -np $np"; }
done
grep -q "(table, 1 files, 3 chunks)" convert.np1.log || fail "expected 3 chunks"
grep -q "features = id:int64:int64:scalar, x1:float:float32:scalar" convert.np1.log ||
  fail "convert did not print the features line"
diff <(cd np1 && ls) <(cd np3 && ls) || fail "file lists differ"
for f in np1/*; do cmp "$f" "np3/$(basename "$f")" || fail "$f differs between 1 and 3 ranks"; done
grep -q '"rows": 50000' np1/table-train.stats.json || fail "stats rows"
# Missing values: x3's NA cells took the default 0, counted in the statistics and said so.
$py - <<'PY' || fail "stats.json does not count x3's missing values"
import csv, json
na = sum(1 for r in csv.DictReader(open("data/table-train.csv")) if r["x3"] in ("", "NA"))
stats = json.load(open("np1/table-train.stats.json"))
x3 = next(c for c in stats["columns"] if c["name"] == "x3")
assert na > 0 and x3["missing"] == na, (na, x3["missing"])
assert x3["count"] == 50000 and "default" in stats["missing_values"]
assert next(c for c in stats["columns"] if c["name"] == "x1")["missing"] == 0
PY
[ "$(cat np1/table-train.vocab.city.txt | wc -l)" = 6 ] || fail "city vocabulary"
# The same table as JSON lines (input.table_format = jsonl): 1 and 3 ranks alike, and the same
# rows and vocabularies as from the CSV.
$py - <<'PY'
import csv, json
with open("data/table-train.csv") as f, open("table.jsonl", "w") as out:
    for r in csv.DictReader(f):
        out.write(json.dumps({"id": int(r["id"]), "x1": float(r["x1"]), "x2": float(r["x2"]),
                              "x3": 0.0 if r["x3"] == "NA" else float(r["x3"]),
                              "income": float(r["income"]), "city": r["city"],
                              "zone": int(r["zone"]), "label": int(r["label"])}) + "\n")
PY
for np in 1 3; do
  mkdir -p js$np
  timeout -k 5 120 "${mpi[@]}" -np $np "$bin/shardflow-convert" --input.format=table \
    --input.table_format=jsonl --input.files=table.jsonl --input.columns=${columns/=0/} \
    --input.categorical=zone --input.chunk_mb=1 --output.path=js$np/t --output.shards=4 \
    >convert.js$np.log 2>&1 || { cat convert.js$np.log; fail "convert jsonl -np $np"; }
done
for f in js1/*; do cmp "$f" "js3/$(basename "$f")" || fail "$f differs between 1 and 3 ranks"; done
grep -q '"rows": 50000' js1/t.stats.json || fail "jsonl stats rows"
cmp js1/t.vocab.city.txt np1/table-train.vocab.city.txt || fail "jsonl city vocabulary"
cmp js1/t.vocab.zone.txt np1/table-train.vocab.zone.txt || fail "jsonl zone vocabulary"
cp np1/table-train* data/
timeout -k 5 120 "${mpi[@]}" -np 2 "$bin/shardflow-train" --config "$src/configs/tabular.ini" \
  --output run --no-progress --train.threads=1 >train.log 2>&1 || { cat train.log; fail "train"; }
grep -q '"input_layout": "input float32\[20\] = \[0:1) x1 norm' run/summary.json ||
  fail "summary.json has no input layout"
timeout -k 5 60 "$bin/shardflow-predict" --config "$src/configs/tabular.ini" \
  --checkpoint run/checkpoints --data.format=csv --input data/table-test.csv \
  --output run/pred.csv >predict.log 2>&1 || { cat predict.log; fail "predict on the CSV"; }
accuracy=$(sed -n 's/^accuracy: \([0-9.]*\) .*/\1/p' predict.log)
$py -c "import sys; a=float('$accuracy'); sys.exit(0 if 0.90 <= a <= 0.96 else 1)" ||
  fail "accuracy $accuracy outside [0.90, 0.96]"
# The same table with city through an embedding layer (data.assemble = city:index).
assemble=x1:norm,x2:norm,x3:norm,income:norm,city:index,zone:onehot
timeout -k 5 120 "${mpi[@]}" -np 2 "$bin/shardflow-train" --config "$src/configs/tabular.ini" \
  --output emb --no-progress --train.threads=1 --train.epochs=5 --data.assemble=$assemble \
  --eval.assemble=$assemble \
  --model.spec=embedding:7:4:4,dense:64,relu,dense:2 --model.input_shape=14 >emb.log 2>&1 ||
  { cat emb.log; fail "train with an embedding"; }
emb_accuracy=$(sed -n 's/^test accuracy *\([0-9.]*\)$/\1/p' emb.log)
$py -c "import sys; a=float('$emb_accuracy'); sys.exit(0 if 0.90 <= a <= 0.96 else 1)" ||
  fail "embedding accuracy $emb_accuracy outside [0.90, 0.96]"
echo "convert_table_runs.sh $mode: ok (accuracy $accuracy, with an embedding $emb_accuracy)"
