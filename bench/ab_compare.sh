#!/usr/bin/env bash
# Two builds of shardflow side by side on this machine: A and B interleaved (A B A B ...),
# medians and the B/A ratio of each pair. For "no regression" checks of a change: build the
# old tree into one folder and the new into another, then
#   bench/ab_compare.sh OLD/build/bin NEW/build/bin [--reps 7] [--data DIR] [--epochs 3]
#                       [--only step-mlp,step-cnn,step-resnet,train-2r,allreduce,serve]
#                       [--b-train-args "--key=value ..."] [--a-train-args "--key=value ..."]
# --b-train-args: extra shardflow-train arguments for B only (a key A does not know, e.g. turning
# off a new default to see what it costs); --a-train-args the same for A only (e.g. turning on
# an option that is off by default).
# Figures (samples/s, higher is better):
#   step-mlp, step-cnn   shardflow-bench step --model mlp|cnn (one core, batch 128)
#   train-2r             the main job's training (configs/fmnist_mlp.ini, 2 ranks, --epochs) on
#                        TFRecord shards in DIR/data (made by ./run.sh's convert step; DIR
#                        defaults to the checkout)
#   step-resnet          shardflow-bench step --model resnet (one core, batch 128, 3 steps)
#   allreduce            bus bandwidth (GB/s) of a 4 MiB all-reduce, 2 ranks, dist.allreduce auto
#                        (shardflow-bench allreduce, median of 3 measurements of 20 calls)
#   serve                requests/s of shardflow-serve (configs/fmnist_mlp.ini, a checkpoint
#                        trained once by B) under shardflow-serve-load: 8 keep-alive connections,
#                        one instance a request, 3 s after 1 s of warm-up
# (The default --only is the first three and train-2r.)
# Prints one line per figure: name, median A, median B, median of B/A over pairs, min..max.
set -euo pipefail
a=$1 b=$2
shift 2
reps=7
epochs=3
only=step-mlp,step-cnn,train-2r
b_train_args=""
a_train_args=""
data=$(cd "$(dirname "$0")/.." && pwd)
config=$data/configs/fmnist_mlp.ini  # this checkout's, whatever --data says
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --b-train-args) b_train_args=$2; shift 2 ;;
    --a-train-args) a_train_args=$2; shift 2 ;;
    *) echo "ab_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
mpi1=("${mpi[@]:0:${#mpi[@]}-1}" 1)  # the same with -np 1
export OMPI_MCA_mpi_yield_when_idle=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step() {  # BIN MODEL STEPS -> samples/s
  "$1/shardflow-bench" step --model "$2" --steps "$3" | sed -n 's/.* \([0-9.]*\) samples\/s.*/\1/p' | head -1
}
train() {  # BIN [EXTRA ARGS (one word-split string)] -> samples/s from summary.json
  # shellcheck disable=SC2086
  (cd "$data" && "${mpi[@]}" "$1/shardflow-train" --config "$config" --output "$work/run" \
    --train.epochs="$epochs" --eval.files= --no-progress --log.level=warn ${2:-} >/dev/null)
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' \
    "$work/run/summary.json"
  rm -rf "$work/run"
}

allreduce() {  # BIN -> busbw GB/s of a 4 MiB all-reduce (auto) on 2 ranks
  "${mpi[@]}" "$1/shardflow-bench" allreduce --min-bytes 4M --max-bytes 4M --algorithms auto \
    --iters 20 --repeats 3 | awk '$2 == "auto" {print $5}' | head -1
}
serve_ready=0
serve() {  # BIN -> requests/s of shardflow-serve under 8 keep-alive connections
  if [ $serve_ready -eq 0 ]; then  # a checkpoint and a request body, once (B's training)
    (cd "$data" && "${mpi1[@]}" "$b/shardflow-train" --config "$config" \
      --output "$work/serve_model" --train.max_steps=2 --eval.files= --no-progress \
      --log.level=warn >/dev/null)
    /usr/bin/python3 - "$work/body.json" <<'PY'
import gzip, json, sys
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    f.read(16)
    img = list(f.read(784))
json.dump({"instances": [img]}, open(sys.argv[1], "w"))
PY
    serve_ready=1
  fi
  local log=$work/server.$RANDOM.log port= pid
  (cd "$data" && exec "$1/shardflow-serve" --config "$config" --checkpoint \
    "$work/serve_model/checkpoints" --port 0 --serve.watch_seconds=0 >"$log" 2>&1) &
  pid=$!
  for _ in $(seq 400); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$log" >&2; kill -KILL $pid; return 1; }
  "$b/shardflow-serve-load" --port "$port" --body "$work/body.json" --connections 8 \
    --seconds 3 --warmup 1 | sed -n 's/.*: \([0-9.]*\) requests\/s.*/\1/p'
  kill -TERM $pid
  wait $pid || true
}

report() {  # NAME FILE_A FILE_B
  /usr/bin/python3 - "$@" <<'PY'
import statistics, sys
name, fa, fb = sys.argv[1:4]
a = [float(x) for x in open(fa).read().split()]
b = [float(x) for x in open(fb).read().split()]
r = [y / x for x, y in zip(a, b)]
print(f"{name:11s} A {statistics.median(a):10.3g}  B {statistics.median(b):10.3g}  "
      f"B/A median {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f}, {len(r)} pairs)")
PY
}

for figure in ${only//,/ }; do
  : >"$work/a" ; : >"$work/b"
  for ((i = 0; i < reps; ++i)); do
    for side in a b; do
      bin=$a; [ $side = b ] && bin=$b
      case $figure in
        step-mlp) step "$bin" mlp 300 >>"$work/$side" ;;
        step-cnn) step "$bin" cnn 15 >>"$work/$side" ;;
        step-resnet) step "$bin" resnet 3 >>"$work/$side" ;;
        allreduce) allreduce "$bin" >>"$work/$side" ;;
        serve) serve "$bin" >>"$work/$side" ;;
        train-2r)
          extra=$a_train_args
          [ $side = b ] && extra=$b_train_args
          train "$bin" "$extra" >>"$work/$side"
          ;;
      esac
    done
  done
  report "$figure" "$work/a" "$work/b"
done
