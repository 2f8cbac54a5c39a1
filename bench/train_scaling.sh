#!/usr/bin/env bash
# Training benchmarks of shardflow-train (not CI): every figure comes from a run's summary.json.
#   bench/train_scaling.sh [--reps N] [--mlp-steps S] [--cnn-steps S] [--bucket-mb M]
#                          [--bin DIR] [--work DIR] [--json]
# For the MLP (configs/fmnist_mlp.ini) and the CNN (configs/fmnist_cnn.ini), per-rank batch 64,
# one intra-op thread per rank, train.max_steps bounding each run, no evaluation:
#   (a) overlap: 2 ranks with dist.overlap=true vs false: samples/s and comm_fraction;
#   (b) weak scaling: 1 rank vs 2 ranks (overlap on): efficiency = sps(2) / (2 x sps(1)).
#   (c) the machine's ceiling for (b): two independent 1-rank runs at the same time, each pinned
#       to its own core the way mpirun binds the two ranks of (b), no communication at all:
#       ceiling = (sps(A) + sps(B)) / (2 x sps(1)); (b) / (c) is what communication and
#       synchronisation cost. On a small shared machine (c) can be below 1: the two processes
#       share caches, memory bandwidth and the host's other tenants.
# The three runs of a repetition are interleaved (np1, np2 on, np2 off) so load drifts hit them
# alike; each cell is the median over the repetitions, and the 1-minute load average before
# every run is recorded. samples/s is the summary's: samples over the slowest rank's loop wall
# time (start-up, data counting and the final checkpoint excluded).
# Needs 2 cores or more (taskset -c 0 / -c 1).
# Data: the Fashion-MNIST training split as 8 TFRecord shards, made once in WORK/data.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin work=/tmp/shardflow-train-bench reps=3 mlp_steps=300 cnn_steps=60
bucket_mb=1 json=0
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --mlp-steps) mlp_steps=$2; shift 2 ;;
    --cnn-steps) cnn_steps=$2; shift 2 ;;
    --bucket-mb) bucket_mb=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "train_scaling.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --allow-run-as-root --oversubscribe)
py=/usr/bin/python3
mkdir -p "$work/runs"
cd "$work"
if ! ls data/fmnist-train-*.tfrecord >/dev/null 2>&1; then
  "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=train \
    --output.shards=8 --output.path=data/fmnist-train >convert.log 2>&1 ||
    { cat convert.log; exit 1; }
fi

results=$work/results.jsonl
: >"$results"
run() {  # run MODEL NP OVERLAP REP
  local model=$1 np=$2 overlap=$3 rep=$4 steps=$mlp_steps
  [ "$model" = cnn ] && steps=$cnn_steps
  local out=runs/$model-np$np-overlap$overlap-rep$rep
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  rm -rf "$out"
  "${mpi[@]}" -np "$np" "$bin/shardflow-train" --config "$src/configs/fmnist_$model.ini" \
    --data.files='data/fmnist-train-*.tfrecord' --eval.files= --no-progress \
    --train.threads=1 --train.batch_size=64 --train.max_steps="$steps" \
    --dist.overlap="$overlap" --dist.bucket_mb="$bucket_mb" --output "$out" >"$out.log" 2>&1 ||
    { cat "$out.log"; exit 1; }
  $py - "$out/summary.json" "$model" "$np" "$overlap" "$rep" "$load" >>"$results" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"model": sys.argv[2], "ranks": int(sys.argv[3]), "overlap": sys.argv[4],
                  "rep": int(sys.argv[5]), "load1": float(sys.argv[6]), "steps": s["steps"],
                  "samples_per_s": s["samples_per_s"], "comm_fraction": s["comm_fraction"],
                  "wall_s": s["wall_s"]}))
EOF
}

# Two independent 1-rank runs at once, on cores 0 and 1 (the control of (c)).
run_pair() {  # run_pair MODEL REP
  local model=$1 rep=$2 steps=$mlp_steps load
  [ "$model" = cnn ] && steps=$cnn_steps
  load=$(cut -d' ' -f1 /proc/loadavg)
  local pids=() core
  for core in 0 1; do
    local out=runs/$model-pair$core-rep$rep
    rm -rf "$out"
    taskset -c "$core" "${mpi[@]}" --bind-to none -np 1 "$bin/shardflow-train" \
      --config "$src/configs/fmnist_$model.ini" --data.files='data/fmnist-train-*.tfrecord' \
      --eval.files= --no-progress --train.threads=1 --train.batch_size=64 \
      --train.max_steps="$steps" --output "$out" >"$out.log" 2>&1 &
    pids+=($!)
  done
  for core in 0 1; do
    wait "${pids[$core]}" || { cat "runs/$model-pair$core-rep$rep.log"; exit 1; }
  done
  $py - "runs/$model-pair0-rep$rep/summary.json" "runs/$model-pair1-rep$rep/summary.json" \
    "$model" "$rep" "$load" >>"$results" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(json.dumps({"model": sys.argv[3], "ranks": 0, "overlap": "pair", "rep": int(sys.argv[4]),
                  "load1": float(sys.argv[5]), "steps": a["steps"],
                  "samples_per_s": a["samples_per_s"] + b["samples_per_s"], "comm_fraction": 0.0,
                  "wall_s": max(a["wall_s"], b["wall_s"])}))
EOF
}

for model in mlp cnn; do
  for rep in $(seq 1 "$reps"); do
    run "$model" 1 true "$rep"
    run "$model" 2 true "$rep"
    run "$model" 2 false "$rep"
    run_pair "$model" "$rep"
  done
done

$py - "$results" "$json" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda xs: statistics.median(xs)
def cell(model, ranks, overlap, key):
    return med([r[key] for r in rows
                if r["model"] == model and r["ranks"] == ranks and r["overlap"] == overlap])
loads = [r["load1"] for r in rows]
print(f"runs: {len(rows)}; 1-min load before runs: median {med(loads):.2f}, "
      f"min {min(loads):.2f}, max {max(loads):.2f}")
print("(a) overlap, 2 ranks (medians)")
print("model  overlap  samples/s  comm_fraction")
out = []
for model in ("mlp", "cnn"):
    for ov in ("true", "false"):
        sps, cf = cell(model, 2, ov, "samples_per_s"), cell(model, 2, ov, "comm_fraction")
        print(f"{model:5}  {ov:7}  {sps:9.0f}  {cf:13.3f}")
        out.append({"table": "overlap", "model": model, "overlap": ov, "samples_per_s": sps,
                    "comm_fraction": cf})
    gain = cell(model, 2, "true", "samples_per_s") / cell(model, 2, "false", "samples_per_s")
    print(f"{model:5}  gain on/off: {gain:.3f}x")
print("(b) weak scaling, 64 per rank (medians; 2 ranks with overlap), and (c) the machine's")
print("    ceiling: two independent 1-rank runs at once, one per core, no communication")
print("model  sps(1)  sps(2)  efficiency  sps(pair)  ceiling  efficiency/ceiling")
for model in ("mlp", "cnn"):
    s1, s2 = cell(model, 1, "true", "samples_per_s"), cell(model, 2, "true", "samples_per_s")
    sp = cell(model, 0, "pair", "samples_per_s")
    eff, ceil = s2 / (2 * s1), sp / (2 * s1)
    print(f"{model:5}  {s1:6.0f}  {s2:6.0f}  {eff:10.3f}  {sp:9.0f}  {ceil:7.3f}  {eff / ceil:18.3f}")
    out.append({"table": "weak_scaling", "model": model, "sps1": s1, "sps2": s2,
                "efficiency": eff, "sps_pair": sp, "ceiling": ceil,
                "efficiency_of_ceiling": eff / ceil})
if sys.argv[2] == "1":
    for o in out:
        print(json.dumps(o))
EOF
