#!/usr/bin/env bash
# Process-level tests of shardflow-train and shardflow-predict on the pipeline-source formats
# (issue 28). Prints "input_records_runs.sh MODE: ok" last when every check passed.
#   input_records_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   images_no_files  [data] format = images reads data.root: train and predict run without
#                    data.files (it used to be demanded: "no file patterns given").
#   skip_total       JSON lines with 3 bad lines over 2 files and on_error = skip, 2 ranks,
#                    2 epochs: each bad line is warned once (not once per pass), and the total is
#                    in the run report, in summary.json (skipped_records) and in predict's output.
#   csv_rows         a CSV whose first rows are 20x longer than the rest (a long text column),
#                    with that unused string column declared in csv_columns, on 3 ranks with
#                    the default shard_policy (auto: byte ranges): every row is trained exactly
#                    once in each of 2 epochs (counted by SHARDFLOW_TEST_ROW_IDS), nothing is
#                    left out, and the unused column never reaches batching. Byte ranges cut at
#                    equal bytes left 30% of such rows out; the column broke batching.
#   jpeg_shards      JPEGs of varied sizes converted keeping their bytes (image/encoded, the
#                    features line from meta.json: *x*x3), trained through random_resized_crop
#                    with evaluation's center crop, predicted; without a crop, one line; every
#                    image once per epoch on 3 and 4 ranks; the same losses with 1 and 2 map
#                    threads; a truncated JPEG fails the run, or under on_error = skip is
#                    dropped and counted.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# A model small enough to train in a second; its exit status is returned.
train() {
  local log=$1
  shift
  run_train 2 "$log" --eval.files= --train.epochs=2 --train.batch_size=4 --train.warmup_steps=1 \
    --model.spec='flatten, dense:3' --model.label_feature=label --output run "$@"
}
predict() {
  local log=$1
  shift
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-predict" --config run/resolved.ini \
    --checkpoint run/checkpoints --output p.csv --train.threads=1 "$@" >"$log" 2>&1
}
count() { grep -c -- "$1" "$2" || true; }

case "$mode" in
images_no_files)
  # 2 classes x 3 copies of a 4x3 grey PNG written by Pillow (tests/fixtures/images).
  for cls in a b; do
    mkdir -p "root/$cls"
    for i in 1 2 3; do cp "$src/tests/fixtures/images/grey16.png" "root/$cls/$i.png"; done
  done
  img=(--data.format=images --data.root=root --data.channels=1 --data.files=
       --model.input_shape=3,4,1 --model.input_feature=image)
  train a.log "${img[@]}" || { cat a.log; fail "training on format images without data.files"; }
  [ -f run/summary.json ] || fail "no summary.json"
  predict p.log || { cat p.log; fail "predicting on format images without data.files"; }
  grep -q "^predicted 6 records on 2 ranks" p.log || { cat p.log; fail "predict did not see 6 images"; }
  ;;
skip_total)
  mkdir d
  $py - <<'PY'
import json
for f in range(2):
    with open(f"d/part-{f}.jsonl", "w") as out:
        for i in range(20):
            if (f, i) == (0, 5):
                out.write('{"x": [1, 2, 3], "label": 1}\n')  # 3 numbers for x:float32[4]
            elif (f, i) == (0, 11):
                out.write('{"x": [1, 2, 3, 4], "label": 1\n')  # malformed JSON
            elif (f, i) == (1, 7):
                out.write('{"label": 2}\n')  # x missing
            else:
                out.write(json.dumps({"x": [i % 3, f, i / 20, 1.0], "label": i % 3}) + "\n")
PY
  src_args=(--data.files='d/*.jsonl' --data.format=jsonl --data.json_schema='x:float32[4],label:int64'
            --data.on_error=skip --model.input_shape=4 --model.input_feature=x)
  train a.log "${src_args[@]}" || { cat a.log; fail "training failed"; }
  n=$(count "skipping bad record" a.log)
  [ "$n" = 3 ] || { cat a.log; fail "$n 'skipping bad record' warnings in training, wanted 3 (one per bad line)"; }
  for where in "line 6, field 'x'.*part-0.jsonl" "line 12: malformed JSON.*part-0.jsonl" \
               "line 8, field 'x': missing field.*part-1.jsonl"; do
    [ "$(count "skipping bad record: data loss: $where" a.log)" = 1 ] || { cat a.log; fail "no single warning for $where"; }
  done
  grep -q "^skipped records 3 (bad input records, on_error = skip)$" a.log ||
    { cat a.log; fail "no 'skipped records 3' line in the run report"; }
  got=$($py -c 'import json; print(json.load(open("run/summary.json")).get("skipped_records"))')
  [ "$got" = 3 ] || fail "summary.json skipped_records = $got, wanted 3"
  predict p.log || { cat p.log; fail "prediction failed"; }
  n=$(count "skipping bad record" p.log)
  [ "$n" = 3 ] || { cat p.log; fail "$n 'skipping bad record' warnings in predict, wanted 3"; }
  grep -q "^predicted 37 records on 2 ranks" p.log || { cat p.log; fail "predict did not give 37 records"; }
  grep -q "^skipped 3 bad records (on_error = skip)$" p.log || { cat p.log; fail "no 'skipped 3 bad records' in predict's output"; }
  ;;
csv_rows)
  $py - <<'PY'
import random
rng = random.Random(5)
with open("rows.csv", "w") as f:
    f.write("x1,x2,note,label\n")
    for i in range(300):
        x1, x2 = rng.gauss(0, 1), rng.gauss(0, 1)
        note = ("long note " * 40) if i < 90 else "n%d" % i
        if i % 37 == 5:
            note = '"two\nlines"'
        f.write("%.5f,%.5f,%s,%d\n" % (x1, x2, note, int(x1 + x2 > 0)))
PY
  # 300 rows over 3 ranks, 10 per rank a step: 10 steps an epoch (steps 0..19), none left out.
  SHARDFLOW_TEST_ROW_IDS=ids run_train 3 a.log --eval.files= --train.epochs=2 \
    --train.batch_size=10 --train.warmup_steps=1 --data.files=rows.csv --data.format=csv \
    --data.features= --data.csv_columns=x1:float32,x2:float32,note:string,label:int64 \
    --data.assemble=x1,x2 --model.input_feature=input --model.input_shape=2 \
    --model.spec='dense:4, relu, dense:2' --model.label_feature=label --output run ||
    { cat a.log; fail "training from the CSV failed"; }
  grep -q "shard_policy=byte_range" a.log || { cat a.log; fail "auto did not pick byte ranges"; }
  ! grep -qE "are left out of every epoch|left out [0-9]" a.log || { cat a.log; fail "rows were left out"; }
  $py "$here/check_row_ids.py" 300 2 20 0 ids || fail "rows not trained exactly once per epoch"
  ;;
jpeg_shards)
  # 16 JPEGs of ImageNet's shapes at long side 48 (made from the fixture photograph by the image
  # benchmark), converted keeping their bytes, trained on 2 ranks through random_resized_crop
  # (evaluation: its center crop) and predicted (issue 49).
  "$bin/shardflow-bench" image --source "$src/tests/fixtures/images" --work corpus --images 16 \
    --long-side 48 --corpus-only >bench.log 2>&1 || { cat bench.log; fail "making the corpus"; }
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=images \
    --input.root=corpus/images --output.shards=3 --output.path=shards/img >convert.log 2>&1 ||
    { cat convert.log; fail "converting the JPEG folder"; }
  features=$($py -c 'import json; print(json.load(open("shards/img.meta.json"))["data_features"])')
  [ "$features" = "image/encoded:image:uint8:*x*x3, label:int64:int64:scalar" ] ||
    fail "meta.json data_features: $features"
  jpeg=(--data.files='shards/img-*.tfrecord' --data.features="$features"
        --data.image_feature=image/encoded --model.input_feature=image/encoded
        --model.input_shape=8,8,3 --model.spec='flatten, dense:8')
  # Images of any size without a crop or resize: one line naming the feature, exit 2.
  rc=0
  train n.log "${jpeg[@]}" || rc=$?
  [ "$rc" = 2 ] || { cat n.log; fail "exit $rc for images of any size without a crop, wanted 2"; }
  [ "$(count "image feature 'image/encoded' has any size (\*x\*x3)" n.log)" -ge 1 ] ||
    { cat n.log; fail "no error naming the feature of any size"; }
  train a.log "${jpeg[@]}" --eval.files='shards/img-*.tfrecord' --eval.features="$features" \
    --data.augmentations='random_resized_crop:8x8:0.25,1, random_flip, normalize:123.675,116.28,103.53/58.395,57.12,57.375' ||
    { cat a.log; fail "training on the JPEG shards"; }
  grep -q "\[data\] .*decode fused into random_resized_crop:8x8:0.25,1" a.log ||
    { cat a.log; fail "training did not fuse the decode into the crop"; }
  grep -q "\[eval\] .*decode fused into center_crop:8x8" a.log ||
    { cat a.log; fail "evaluation did not center-crop"; }
  predict p.log || { cat p.log; fail "predicting on the JPEG shards"; }
  grep -q "^predicted 16 records on 2 ranks" p.log || { cat p.log; fail "predict did not see 16 images"; }
  # Every image once per epoch on 4 ranks (2 a step each, 2 steps an epoch, steps 0..3).
  aug=--data.augmentations='random_resized_crop:8x8, random_flip'
  SHARDFLOW_TEST_ROW_IDS=ids run_train 4 r4.log --eval.files= --train.epochs=2 \
    --train.batch_size=2 --train.warmup_steps=1 --model.label_feature=label "${jpeg[@]}" "$aug" \
    --output run4 || { cat r4.log; fail "training on 4 ranks"; }
  $py "$here/check_row_ids.py" 16 2 4 0 ids || fail "images not trained exactly once per epoch"
  # And on 3 ranks, which 16 images do not divide (6, 5, 5: 3 steps an epoch, steps 0..5).
  SHARDFLOW_TEST_ROW_IDS=ids3 run_train 3 r3.log --eval.files= --train.epochs=2 \
    --train.batch_size=2 --train.warmup_steps=1 --model.label_feature=label "${jpeg[@]}" "$aug" \
    --output run3 || { cat r3.log; fail "training on 3 ranks"; }
  ! grep -qE "are left out of every epoch|left out [0-9]" r3.log || { cat r3.log; fail "images were left out on 3 ranks"; }
  $py "$here/check_row_ids.py" 16 2 6 0 ids3 || fail "images not trained exactly once per epoch on 3 ranks"
  # The same training with 1 and 2 map threads: the crops are keyed by (seed, epoch, image),
  # not by the thread that decodes them, so every step's loss is the same.
  for calls in 1 2; do
    run_train 2 c$calls.log --eval.files= --train.epochs=2 --train.batch_size=4 \
      --train.warmup_steps=1 --model.label_feature=label "${jpeg[@]}" "$aug" \
      --data.parallel_calls=$calls --output run_c$calls || { cat c$calls.log; fail "calls $calls"; }
  done
  losses() { $py -c 'import json, sys; print([json.loads(l).get("loss") for l in open(sys.argv[1])])' "$1"; }
  [ "$(losses run_c1/metrics.jsonl)" = "$(losses run_c2/metrics.jsonl)" ] ||
    fail "1 and 2 map threads trained differently: $(losses run_c1/metrics.jsonl) vs $(losses run_c2/metrics.jsonl)"
  # A JPEG cut short (header intact: 150 bytes of its entropy data gone) in the folder: on_error = fail stops with one line naming
  # it; skip trains on, the fused crop dropping it from its batch, and the report counts it.
  whole=corpus/images/class0/img00000.jpg
  head -c $(($(stat -c %s "$whole") - 150)) "$whole" >corpus/images/class0/img99999.jpg
  folder=(--data.format=images --data.root=corpus/images --data.files= --model.input_feature=image
          --model.input_shape=8,8,3 --model.spec='flatten, dense:8' "$aug")
  rc=0
  train f.log "${folder[@]}" --output run_f || rc=$?
  [ "$rc" != 0 ] || { cat f.log; fail "a truncated JPEG trained under on_error = fail"; }
  grep -q "JPEG decode failed.*img99999.jpg" f.log || { cat f.log; fail "no error naming the truncated JPEG"; }
  train k.log "${folder[@]}" --output run_k --data.on_error=skip || { cat k.log; fail "training with a truncated JPEG under skip"; }
  grep -q "\[data\] .*decode fused into random_resized_crop:8x8" k.log ||
    { cat k.log; fail "skip did not keep the decode fused"; }
  grep -q "^skipped records 1 " k.log || { cat k.log; fail "no 'skipped records 1' in the run report"; }
  grep -q "skipping bad record: .*stage 'decode'.*img99999.jpg" k.log ||
    { cat k.log; fail "the truncated JPEG was not skipped by the fused crop"; }
  ;;
*)
  fail "unknown mode"
  ;;
esac
echo "$script $mode: ok"
