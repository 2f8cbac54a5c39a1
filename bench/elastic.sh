#!/usr/bin/env bash
# Elastic resume measured (issue 16): test accuracy of a run stopped mid-epoch and resumed on
# another rank count against runs never stopped, and what the resume's replay costs.
#   bench/elastic.sh [--bin DIR] [--data DIR] [--reps N] [--epochs N] [--pairs "F:T ..."]
# --data: the folder holding data/ (./run.sh's Fashion-MNIST shards). configs/fmnist_mlp.ini with
# global batch 96 (batch_semantics = global: 24, 32 or 48 per rank on 4, 3 or 2 ranks; 625 steps
# an epoch), --epochs epochs (default 3). Per repetition, with data seed = model seed = the
# repetition's number:
#   4          4 ranks, never stopped
#   4->2       4 ranks stopped by SIGTERM at step 925 (epoch 1, 300 steps in; checkpoint at 927),
#              resumed on 2 ranks
#   2          2 ranks, never stopped
#   2->3       2 ranks stopped the same way, resumed on 3
# --pairs picks other rank counts (default "4:2 2:3"): F never stopped, and F stopped and resumed
# on T. 96 does not divide over 5 ranks: "5:4" measures uneven batches (20,19,19,19,19; each
# step weighs the gradients by rows) never stopped and resumed onto even ones.
# Prints each run's test accuracy, the medians, and the replay time (the resume's log: from
# "resuming from" to the "elastic resume" line).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin data=$here reps=3 epochs=3 pairs="4:2 2:3"
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    *) echo "elastic.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1 SHARDFLOW_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# train NP LOG FAULT ARGS...: one run into $work/out; returns its exit status.
train() {
  local np=$1 log=$2 fault=$3 rc=0
  shift 3
  SHARDFLOW_TEST_FAULT=$fault "${mpi[@]}" -np "$np" "$bin/shardflow-train" \
    --config "$here/configs/fmnist_mlp.ini" --data.files="$data/data/fmnist-train-*-of-*.tfrecord" \
    --eval.files="$data/data/fmnist-test-*-of-*.tfrecord" --no-progress --train.threads=1 \
    --train.batch_size=96 --train.batch_semantics=global --train.epochs="$epochs" \
    --checkpoint.every_epochs=0 --output "$work/out" "$@" >"$log" 2>&1 || rc=$?
  return $rc
}

accuracy() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_accuracy"])' "$work/out/summary.json"; }

for rep in $(seq 1 "$reps"); do
  seeds=(--model.seed="$rep" --data.seed="$rep")
  for pair in $pairs; do
    from=${pair%%:*} to=${pair##*:}
    rm -rf "$work/out"
    train $from "$work/log" "" "${seeds[@]}" || { cat "$work/log"; exit 1; }
    echo "$from $rep $(accuracy)" >>"$work/acc"
    echo "$from" >>"$work/order"
    echo "$from->$to" >>"$work/order"
    rm -rf "$work/out"
    rc=0
    train $from "$work/log" term:all:925 "${seeds[@]}" || rc=$?
    [ $rc -eq 75 ] || { cat "$work/log"; echo "stopped run: exit $rc" >&2; exit 1; }
    train $to "$work/rlog" "" "${seeds[@]}" --resume || { cat "$work/rlog"; exit 1; }
    grep -q "elastic resume: $from -> $to ranks" "$work/rlog" || { cat "$work/rlog"; exit 1; }
    echo "$from->$to $rep $(accuracy)" >>"$work/acc"
    # Seconds from the resume line to the elastic line (the replay of the old ranks' inputs).
    sed -n 's/^\[r0 [A-Z] *\([0-9.]*\)\] \(resuming from\|elastic resume\).*/\1/p' "$work/rlog" |
      awk 'NR==1{a=$1} NR==2{printf "%s %.3f\n", "replay", $1-a}' | sed "s/^/$from->$to $rep /" >>"$work/replay"
  done
done
python3 - "$work/acc" "$work/replay" "$work/order" <<'PY'
import collections, statistics, sys
acc = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, rep, a = line.split()
    acc[name].append(float(a))
replay = collections.defaultdict(list)
for line in open(sys.argv[2]):
    name, rep, _, s = line.split()
    replay[name].append(float(s))
print("| run | test accuracy per repetition | median | replay at the resume (s, median) |")
print("|---|---|---|---|")
for name in dict.fromkeys(line.strip() for line in open(sys.argv[3])):
    v = acc[name]
    r = f"{statistics.median(replay[name]):.2f}" if replay.get(name) else "-"
    print(f"| {name} | {', '.join(f'{x:.4f}' for x in v)} | {statistics.median(v):.4f} | {r} |")
PY
