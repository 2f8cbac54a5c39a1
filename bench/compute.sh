#!/usr/bin/env bash
# Compute vs PyTorch and Keras (issue 25), not CI: shardflow-train at 2 ranks x 1 thread and
# 1 rank x 2 threads against PyTorch with 2 threads (bench/peers/run_torch_peer.sh) and Keras
# (tensorflow-cpu) with 2 intra-op threads (bench/peers/run_keras_peer.sh; its venv is
# SHARDFLOW_PEER_VENV), training the configs/ MLP, CNN and ResNet on Fashion-MNIST with global
# batch 128, SGD momentum 0.9, the same epochs.
#   bench/compute.sh [--reps 3] [--models mlp,cnn] [--mlp-epochs 3] [--cnn-epochs 1]
#                    [--resnet-epochs 1]
#                    [--peers torch,keras] [--precision fp32|bf16] [--bin DIR] [--work DIR]
# --precision bf16 (issue 48): shardflow with train.precision = bf16 against PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16); Keras has no bf16 peer here (use --peers torch).
# The contenders of a repetition run one after another, the order rotating between repetitions,
# so load drifts hit them alike; the 1-minute load average before each run is recorded.
# Counted: whole-epoch wall time. shardflow: the summary's samples/s (samples over the slowest
# rank's training-loop wall time: every epoch's input pipeline, steps and all-reduces, and the
# evaluation between epochs; start-up and the final evaluation excluded). PyTorch: samples over
# the sum of its epochs' wall times (shuffle, batching and steps on data already decoded in
# memory; start-up and the final evaluation excluded). Keras: samples over the sum of the epoch
# wall times of model.fit on the arrays in memory (its first epoch includes tracing the step).
# Test accuracy: the final evaluation of each. Prints every run, then per model the medians
# and the ratios shardflow / PyTorch and shardflow / Keras.
# Data: the Fashion-MNIST TFRecords made once in WORK/data from the Debian package (PyTorch
# reads the package's files directly).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin work=/tmp/shardflow-compute-bench reps=3 models=mlp,cnn
mlp_epochs=3 cnn_epochs=1 resnet_epochs=1 peers=torch,keras precision=fp32
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --mlp-epochs) mlp_epochs=$2; shift 2 ;;
    --cnn-epochs) cnn_epochs=$2; shift 2 ;;
    --resnet-epochs) resnet_epochs=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "compute.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
py=/usr/bin/python3
mkdir -p "$work/runs"
cd "$work"
if ! ls data/fmnist-test-*.tfrecord >/dev/null 2>&1; then
  for split in train test; do
    "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=$split \
      --output.shards=8 --output.path=data/fmnist-$split >convert.log 2>&1 ||
      { cat convert.log; exit 1; }
  done
fi
echo "compute.sh: $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "reps $reps, epochs mlp $mlp_epochs cnn $cnn_epochs resnet $resnet_epochs, precision $precision"
if [ "$precision" = bf16 ] && [[ ",$peers," == *,keras,* ]]; then
  echo "compute.sh: Keras has no bf16 peer here; use --peers torch" >&2
  exit 2
fi
results=$work/results.jsonl
: >"$results"

shardflow() {  # shardflow MODEL RANKS THREADS REP EPOCHS
  local model=$1 np=$2 threads=$3 rep=$4 epochs=$5 load out
  out=runs/$model-np$np-t$threads-rep$rep
  load=$(cut -d' ' -f1 /proc/loadavg)
  rm -rf "$out"
  # mpirun binds each of 2 or fewer ranks to one core: a rank with 2 threads needs them unbound
  # (before 2026-11-25 the 1 x 2 runs time-sliced 2 threads on one core).
  local bind=()
  [ "$threads" -gt 1 ] && bind=(--bind-to none)
  "${mpi[@]}" "${bind[@]}" -np "$np" "$bin/shardflow-train" --config "$src/configs/fmnist_$model.ini" \
    --data.files='data/fmnist-train-*.tfrecord' --eval.files='data/fmnist-test-*.tfrecord' \
    --no-progress --train.threads="$threads" --train.batch_size=$((128 / np)) \
    --train.epochs="$epochs" --train.precision="$precision" --output "$out" >"$out.log" 2>&1 ||
    { cat "$out.log"; exit 1; }
  $py - "$out/summary.json" "$model" "shardflow ${np}x$threads" "$rep" "$load" <<'PY' |
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"model": sys.argv[2], "who": sys.argv[3], "rep": int(sys.argv[4]),
                  "load1": float(sys.argv[5]), "samples_per_s": round(s["samples_per_s"], 1),
                  "wall_s": round(s["wall_s"], 2), "test_accuracy": s.get("test_accuracy")}))
PY
    tee -a "$results"
}

peer() {  # peer torch|keras MODEL REP EPOCHS
  local who=$1 model=$2 rep=$3 epochs=$4 load line
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$("$here/peers/run_${who}_peer.sh" --model "$model" --epochs "$epochs" --threads 2 \
    --precision "$precision" \
    2>"runs/$who-$model-rep$rep.err") || { cat "runs/$who-$model-rep$rep.err"; exit 1; }
  $py - "$line" "$model" "$rep" "$load" "$who" <<'PY' | tee -a "$results"
import json, sys
t = json.loads(sys.argv[1])
name = {"torch": "pytorch", "keras": "keras"}[sys.argv[5]]
print(json.dumps({"model": sys.argv[2], "who": f"{name} 1x2", "rep": int(sys.argv[3]),
                  "load1": float(sys.argv[4]), "samples_per_s": t["samples_per_s"],
                  "wall_s": round(sum(t["epoch_seconds"]), 2),
                  "test_accuracy": t["test_accuracy"], "version": t["version"]}))
PY
}

contenders=("np2 1" "np1 2")
for p in ${peers//,/ }; do contenders+=("$p"); done
n=${#contenders[@]}
for rep in $(seq "$reps"); do
  for model in ${models//,/ }; do
    epochs=$mlp_epochs
    [ "$model" = cnn ] && epochs=$cnn_epochs
    [ "$model" = resnet ] && epochs=$resnet_epochs
    for i in $(seq 0 $((n - 1))); do
      c=${contenders[$(((i + rep - 1) % n))]}
      case $c in
        "np2 1") shardflow "$model" 2 1 "$rep" "$epochs" ;;
        "np1 2") shardflow "$model" 1 2 "$rep" "$epochs" ;;
        *) peer "$c" "$model" "$rep" "$epochs" ;;
      esac
    done
  done
done

$py - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for model in dict.fromkeys(r["model"] for r in rows):
    med = {}
    for who in dict.fromkeys(r["who"] for r in rows if r["model"] == model):
        rs = [r for r in rows if r["model"] == model and r["who"] == who]
        med[who] = statistics.median(r["samples_per_s"] for r in rs)
        accs = [r["test_accuracy"] for r in rs if r["test_accuracy"] is not None]
        acc = f", test accuracy median {statistics.median(accs):.4f}" if accs else ""
        print(f"{model} {who}: median {med[who]:.1f} samples/s over {len(rs)} runs{acc}")
    for peer in ("pytorch 1x2", "keras 1x2"):
        base = med.get(peer)
        for who, v in med.items():
            if base and who.startswith("shardflow"):
                print(f"{model} {who} / {peer}: {v / base:.2f}x")
PY
