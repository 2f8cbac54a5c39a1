#!/usr/bin/env bash
# Two builds of shardflow side by side on this machine: A and B interleaved (A B A B ...),
# medians and the B/A ratio of each pair. For "no regression" checks of a change: build the
# old tree into one folder and the new into another, then
#   bench/ab_compare.sh OLD/build/bin NEW/build/bin [--reps 7] [--data DIR] [--epochs 3]
#                       [--only step-mlp,step-cnn,train-2r] [--b-train-args "--key=value ..."]
#                       [--a-train-args "--key=value ..."]
# --b-train-args: extra shardflow-train arguments for B only (a key A does not know, e.g. turning
# off a new default to see what it costs); --a-train-args the same for A only (e.g. turning on
# an option that is off by default).
# Figures (samples/s, higher is better):
#   step-mlp, step-cnn   shardflow-bench step --model mlp|cnn (one core, batch 128)
#   train-2r             the main job's training (configs/fmnist_mlp.ini, 2 ranks, --epochs) on
#                        TFRecord shards in DIR/data (made by ./run.sh's convert step; DIR
#                        defaults to the checkout)
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

report() {  # NAME FILE_A FILE_B
  /usr/bin/python3 - "$@" <<'PY'
import statistics, sys
name, fa, fb = sys.argv[1:4]
a = [float(x) for x in open(fa).read().split()]
b = [float(x) for x in open(fb).read().split()]
r = [y / x for x, y in zip(a, b)]
print(f"{name:10s} A {statistics.median(a):10.0f}  B {statistics.median(b):10.0f}  "
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
