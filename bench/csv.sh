#!/usr/bin/env bash
# Rows/s of shardflow's streaming CSV source and of shardflow-convert --input.format=table
# against tf.data's CsvDataset on the same file and the same core, interleaved run by run
# (ours, theirs, ours, ...), medians and ratios printed. A benchmark, never part of CI.
#   bench/csv.sh [ROWS] [RUNS]     (defaults 1000000 rows, 5 runs; build/ must hold the apps)
# Cases (each side prints rows/s and a checksum of the numeric values; the checksums must agree):
#   source   one element per row: CsvStreamSource via Dataset::FromRecordSource (shardflow-bench
#            csv --mode source) vs CsvDataset reduced row by row inside tf.data (tf_csv.py)
#   batch    batches of 1024 of the numeric columns: the [data] pipeline (format csv, no shuffle,
#            no prefetch, decode on the consumer thread) vs CsvDataset(...).batch(1024)
#   convert  CSV -> TFRecord Examples: shardflow-convert on 1 rank (statistics pass included,
#            whole-process wall time) vs CsvDataset -> tf.train.Example -> TFRecordWriter, the
#            usual TF recipe (timed inside Python, TF import excluded), on a smaller file
# Both sides read on one thread (SHARDFLOW_BENCH_PIN=0 pins both to core 0 with taskset, for quiet
# machines); tf.data gets a private pool of 1 thread and
# 1 intra-op thread. tensorflow-cpu comes from the venv bench/peers/run_tf_peer.sh makes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
rows=${1:-1000000}
runs=${2:-5}
bin=$src/build/bin
venv=${SHARDFLOW_PEER_VENV:-$src/build/peers-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorflow' 2>/dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorflow-cpu
fi
work=$(mktemp -d /tmp/shardflow-bench-csv.XXXXXX)
trap 'rm -rf "$work"' EXIT
small=$((rows / 200 > 2000 ? rows / 200 : 2000))
python3 "$src/scripts/make_table.py" --rows "$rows" --seed 4 --out "$work/t.csv"
python3 "$src/scripts/make_table.py" --rows "$small" --seed 4 --out "$work/small.csv"
all=id:int64,x1:float32,x2:float32,x3:float32=0,income:float32,city:string,zone:int64,label:int64
num=id:int64,x1:float32,x2:float32,x3:float32=0,income:float32,zone:int64,label:int64
pin=(${SHARDFLOW_BENCH_PIN:+taskset -c $SHARDFLOW_BENCH_PIN})
ours() {  # MODE COLUMNS
  "${pin[@]}" "$bin/shardflow-bench" csv --file "$work/t.csv" --columns "$2" --na NA --mode "$1" \
    --rows "$rows" 2>/dev/null | sed -n 's/^csv .* = \([0-9]*\) rows\/s (checksum \(.*\))$/\1 \2/p'
}
theirs() {  # MODE COLUMNS FILE
  "${pin[@]}" "$venv/bin/python" "$here/peers/tf_csv.py" --file "$3" --columns "$2" --na NA \
    --mode "$1" --out "$work/tf.tfrecord" 2>/dev/null |
    sed -n 's/^csv .* = \([0-9]*\) rows\/s (checksum \(.*\))$/\1 \2/p'
}
convert() {
  local t0 t1
  t0=$(date +%s.%N)
  "${pin[@]}" "$bin/shardflow-convert" --input.format=table --input.files="$work/t.csv" \
    --input.columns="$all" --input.na_values=NA --input.categorical=zone \
    --output.path="$work/out" --output.shards=4 >/dev/null 2>&1
  t1=$(date +%s.%N)
  python3 -c "print(round($rows / ($t1 - $t0)), '-')"
}
declare -A results
for ((r = 1; r <= runs; r++)); do
  for case in source batch convert; do
    case $case in
    source) a=$(ours source "$all"); b=$(theirs source "$all" "$work/t.csv") ;;
    batch) a=$(ours batch "$num"); b=$(theirs batch "$num" "$work/t.csv") ;;
    convert) a=$(convert); b=$(theirs convert "$all" "$work/small.csv") ;;
    esac
    if [ "$case" != convert ] && [ "${a#* }" != "${b#* }" ]; then
      echo "csv.sh: $case checksums differ: shardflow ${a#* }, tf.data ${b#* }" >&2
      exit 1
    fi
    results[$case]+="${a%% *} ${b%% *};"
    echo "run $r $case: shardflow ${a%% *} rows/s, tf.data ${b%% *} rows/s"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'); $rows rows, $runs runs interleaved"
for case in source batch convert; do
  python3 - "$case" "${results[$case]}" <<'PY'
import statistics, sys
case, text = sys.argv[1], sys.argv[2]
pairs = [tuple(map(float, p.split())) for p in text.split(";") if p.strip()]
ours = statistics.median(a for a, _ in pairs)
theirs = statistics.median(b for _, b in pairs)
ratio = statistics.median(a / b for a, b in pairs)
print(f"{case:8s} shardflow median {ours:12.0f} rows/s | tf.data median {theirs:12.0f} rows/s | "
      f"ratio (median of pairs) {ratio:6.2f}x")
PY
done
