#!/usr/bin/env bash
# Online prediction measured (issue 18): shardflow-serve on loopback under a closed-loop load
# (shardflow-serve-load: C keep-alive connections, each sending one-instance predict requests
# back to back), for the MLP and the CNN of configs/, with batching off (serve.max_batch_size 1)
# and on (32, 64; serve.batch_timeout_us 1000), at 1, 8 and 64 connections: requests/s (one
# instance each, so also records/s) and exact p50/p99 latencies. Against it, shardflow-predict's
# offline records/s for the same checkpoint and records on the same threads (its default batch
# of 256, and batches of 64 and 1: how the engine's cost per record changes with the batch).
# --threads: the server's intra-op threads (default 1: the load client and the HTTP threads
# share the machine; OMP_WAIT_POLICY=PASSIVE so that idle OpenMP workers do not spin on the
# cores they need). The last lines: medians over the reps, and the ratios of the targets.
#   bench/serve.sh [--bin DIR] [--seconds S] [--threads T] [--models mlp,cnn] [--reps N]
#                  [--precision fp32|bf16]
# --precision: train.precision of the server and of shardflow-predict (issue 48; the model is
# trained in fp32 either way: checkpoints are float).
# Targets: CNN at 64 connections, batching on >= 3x batching off; at saturation >= 0.5 of
# shardflow-predict's offline records/s. Server and client share the machine's cores (loopback).
# Bounded: about (5 + 3 x 3 x (S + 1)) s per model and rep (S = 5: ~60 s).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin seconds=5 threads=1 models=mlp,cnn reps=1 precision=fp32
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    *) echo "serve.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1 OMP_WAIT_POLICY=PASSIVE
work=$(mktemp -d "${TMPDIR:-/tmp}/serve-bench.XXXXXX")
server_pid=
trap '[ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
say() { echo "$*" | tee -a "$work/results.txt"; }
echo "serve.sh: $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$(nproc) cores, --threads $threads, --seconds $seconds, --precision $precision"

"${mpi[@]}" -np 1 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=2000 --output.path="$work/data/fm" --output.shards=2 >"$work/convert.log" 2>&1
python3 - "$work/body.json" <<'PY'
import gzip, json, sys
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    f.read(16)
    img = list(f.read(784))
json.dump({"instances": [img]}, open(sys.argv[1], "w"))
PY

for model in ${models//,/ }; do
  cfg=$here/configs/fmnist_$model.ini
  "${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
    --eval.files= --train.max_steps=2 --train.threads="$threads" --output "$work/$model" \
    --no-progress >"$work/$model.train.log" 2>&1
  for rep in $(seq "$reps"); do
    for batch in 256 64 1; do
      offline=$("${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$cfg" \
        --checkpoint "$work/$model/checkpoints" --input "$work/data/fm-*.tfrecord" \
        --output "$work/p.h5" --train.threads="$threads" --predict.batch_size="$batch" \
        --train.precision="$precision" |
        sed -n 's/^predicted .*: \([0-9]*\) records\/s$/\1/p')
      say "$model rep $rep offline: shardflow-predict $offline records/s (2000 records, batch $batch)"
    done
    for mbs in 1 32 64; do
      # A log per server: the shell forks before the child truncates a reused file, so a reused
      # log could still show the previous server's port.
      log=$work/server-$model-$rep-$mbs.log
      "$bin/shardflow-serve" --config "$cfg" --checkpoint "$work/$model/checkpoints" --port 0 \
        --train.threads="$threads" --train.precision="$precision" \
        --serve.max_batch_size="$mbs" --serve.batch_timeout_us=1000 \
        --serve.watch_seconds=0 >"$log" 2>&1 &
      server_pid=$!
      port=
      for _ in $(seq 400); do
        port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.05
      done
      [ -n "$port" ] || { cat "$log"; exit 1; }
      for conns in 1 8 64; do
        line=$("$bin/shardflow-serve-load" --port "$port" --body "$work/body.json" \
          --connections "$conns" --seconds "$seconds" --warmup 1) || true  # non-200 counted
        say "$model rep $rep max_batch_size $mbs $line"
      done
      batches=$(curl -s "127.0.0.1:$port/metrics" |
        sed -n 's/^shardflow_serve_batch_size_\(sum\|count\) //p' | paste -sd' ')
      say "$model rep $rep max_batch_size $mbs batch sizes: sum count = $batches"
      kill -TERM "$server_pid"
      wait "$server_pid" || true
      server_pid=
    done
  done
done

# Medians over the reps, and the ratios the targets are about.
python3 - "$work/results.txt" <<'PY'
import re, statistics, sys
runs, offline = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) rep \d+ max_batch_size (\d+) connections (\d+): \d+ requests in [\d.]+ s: ([\d.]+) requests/s, p50 ([\d.]+) ms, p90 [\d.]+ ms, p99 ([\d.]+) ms", line)
    if m:
        k = (m[1], int(m[2]), int(m[3]))
        runs.setdefault(k, []).append((float(m[4]), float(m[5]), float(m[6])))
    m = re.match(r"(\w+) rep \d+ offline: shardflow-predict (\d+) records/s \(2000 records, batch (\d+)\)", line)
    if m:
        offline.setdefault((m[1], int(m[3])), []).append(float(m[2]))
med = lambda xs: statistics.median(xs)
print("| model | max_batch_size | connections | requests/s | p50 ms | p99 ms | runs |")
print("|---|---|---|---|---|---|---|")
for k in sorted(runs):
    r = runs[k]
    print(f"| {k[0]} | {k[1]} | {k[2]} | {med([x[0] for x in r]):.0f} | {med([x[1] for x in r]):.2f} | {med([x[2] for x in r]):.2f} | {len(r)} |")
for model in sorted({k[0] for k in runs}):
    off = {b: med(v) for (m, b), v in offline.items() if m == model}
    for mbs in (32, 64):
        if (model, mbs, 64) in runs and (model, 1, 64) in runs:
            on = med([x[0] for x in runs[(model, mbs, 64)]]); offq = med([x[0] for x in runs[(model, 1, 64)]])
            print(f"{model}: 64 connections, max_batch_size {mbs} / 1: {on / offq:.2f}x")
    best = max(med([x[0] for x in runs[k]]) for k in runs if k[0] == model)
    for b, v in sorted(off.items()):
        print(f"{model}: saturation (best requests/s {best:.0f}) / shardflow-predict batch {b} ({v:.0f} records/s): {best / v:.2f}")
PY
