#!/usr/bin/env bash
# Training straight from a CSV file much larger than the pipeline's buffers keeps the peak RSS
# bounded (issue 23): a 140 MB table (330,000 rows of 424 bytes, a long unread text column
# among them; the shuffle window of 10,000 rows holds 3% of it) trained for one epoch on
# one rank; summary.json's peak_rss_mib must stay under 128 MiB — below the file's own size, so a
# reader that held the file in memory could not pass.
#   csv_memory_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
cap_mib=128
$py - <<'PY'
import random
rng = random.Random(7)
notes = "n" * 400
block = []
for i in range(1000):
    x1, x2 = rng.gauss(0, 1), rng.gauss(0, 1)
    label = 1 if x1 - x2 > 0 else 0
    block.append("%.6f,%.6f,%d,%s,%d\n" % (x1, x2, i % 8, notes, label))
with open("big.csv", "w") as out:
    out.write("x1,x2,zone,notes,label\n")
    text = "".join(block)
    for _ in range(330):
        out.write(text)
PY
size=$(stat -c %s big.csv)
[ "$size" -gt $((cap_mib * 1024 * 1024)) ] || fail "the table ($size bytes) must be larger than the cap"
timeout -k 5 120 "${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$src/configs/tabular.ini" \
  --output run --no-progress --train.threads=1 --data.format=csv --data.files=big.csv \
  --data.features= --data.csv_columns=x1:float32,x2:float32,zone:int64,label:int64 \
  --data.assemble=x1,x2,zone --data.assemble_stats= --data.shuffle_buffer=10000 \
  --eval.files= --model.input_shape=3 --train.epochs=1 --train.batch_size=1024 \
  >train.log 2>&1 || { cat train.log; fail "train"; }
peak=$($py -c "import json; print(max(json.load(open('run/summary.json'))['peak_rss_mib']))")
$py -c "import sys; sys.exit(0 if $peak < $cap_mib else 1)" ||
  fail "peak RSS $peak MiB over the cap of $cap_mib MiB on a $size-byte CSV"
echo "csv_memory_runs.sh $mode: ok (peak RSS $peak MiB, cap $cap_mib MiB, CSV $size bytes)"
