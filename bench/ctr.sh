#!/usr/bin/env bash
# Click-through models measured (issue 51), configs/ctr_wide_deep.ini on scripts/make_ctr.py's
# table (made first when data/ctr is missing: 300,000 training and 50,000 evaluation rows).
#   bench/ctr.sh [--bin DIR] [--data DIR] [--reps N] [--steps N] [--rows LIST]
#                [--only quality,scale]
#   quality  one epoch on 2 ranks (data-parallel) and on 1 rank: the exact test AUC and log loss
#            against the rule's own (ctr-meta.json's best_auc and best_log_loss), and the time.
#   scale    the same model with its id space resized to each of --rows (default 1000000,
#            10000000: every id entry hashed into rows / 28 buckets), --steps steps (default
#            60) of 512 rows a rank (a shuffle buffer of 2,048 rows, so that filling it does not
#            weigh on so few steps): data-parallel all-reduce on 2 ranks and the dense
#            parameter server (2 workers + 1 server, synchronous), samples/s (median of --reps),
#            the parameters, and the bytes each rank sends a step by the algorithm (all-reduce:
#            2 (P-1)/P x 4 bytes a parameter; a worker: its push, 4 bytes a parameter, and as
#            many received by its pull). The sparse tables of issue 51 are measured against these.
# Runs interleaved, medians reported; prints the load average with each set.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin data=$here/data/ctr reps=3 steps=60 rows=1000000,10000000 only=quality,scale
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "ctr.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1
if [ ! -f "$data/ctr-meta.json" ]; then
  python3 "$here/scripts/make_ctr.py" --out "$data" --train-rows 300000 --eval-rows 50000
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config=$here/configs/ctr_wide_deep.ini
files=(--data.files="$data/ctr-train.csv" --eval.files="$data/ctr-eval.csv")

# run NAME NP ARGS...: one run; appends its summary.json to NAME.jsonl.
run() {
  local name=$1 np=$2
  shift 2
  rm -rf "$work/out"
  "${mpi[@]}" -np "$np" "$bin/shardflow-train" --config "$config" "${files[@]}" --no-progress \
    --checkpoint.every_epochs=0 --output "$work/out" "$@" >"$work/log" 2>&1 ||
    { tail -20 "$work/log"; exit 1; }
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
    "$work/out/summary.json" >>"$work/$name.jsonl"
}

# The assemble line and model spec with every id entry hashed into B buckets.
resized() {  # resized ROWS -> sets assemble, spec
  local b=$(($1 / 28)) a
  a=$(grep '^assemble = ' "$config" | head -1 | sed 's/^assemble = //')
  assemble=$(echo "$a" | sed -E "s/hash=[0-9]+/hash=$b/g")
  spec="embedbag:$((b * 28)):16:13:27+1x8:mean, dense:256, relu, dense:128, relu, dense:2, wide:$((b * 28)):2:13:35"
}

echo "ctr.sh: $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ ,$only, == *,quality,* ]]; then
  for _ in $(seq "$reps"); do
    run q2 2
    run q1 1
  done
  python3 - "$work" "$data/ctr-meta.json" <<'PY'
import json, statistics, sys
work, meta = sys.argv[1], json.load(open(sys.argv[2]))
print(f"quality: the rule's own AUC {meta['best_auc']['eval']:.4f}, log loss "
      f"{meta['best_log_loss']['eval']:.4f} on the {meta['eval_rows']} evaluation rows")
for name, what in (("q2", "2 ranks, data-parallel"), ("q1", "1 rank")):
    runs = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    auc = statistics.median(r["test_auc"] for r in runs)
    loss = statistics.median(r["test_loss"] for r in runs)
    wall = statistics.median(r["wall_s"] for r in runs)
    print(f"  {what}: test AUC {auc:.4f} ({auc - meta['best_auc']['eval']:+.4f}), log loss "
          f"{loss:.4f}, {wall:.1f} s for one epoch, runs {len(runs)}")
PY
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
if [[ ,$only, == *,scale,* ]]; then
  for r in ${rows//,/ }; do
    resized "$r"
    common=("--data.assemble=$assemble" "--eval.assemble=$assemble" "--model.spec=$spec"
      --eval.files= --train.max_steps="$steps" --data.shuffle_buffer=2048)
    for _ in $(seq "$reps"); do
      run "dp$r" 2 "${common[@]}"
      run "ps$r" 3 "${common[@]}" --dist.strategy=parameter_server --dist.ps_ranks=1 \
        --dist.max_staleness=0
    done
    python3 - "$work" "$r" <<'PY'
import json, statistics, sys
work, rows = sys.argv[1], int(sys.argv[2])
b = rows // 28 * 28
params = b * 16 + b * 2 + (13 + 28 * 16) * 256 + 256 + 256 * 128 + 128 + 128 * 2 + 2
for name, what, ranks in (("dp", "all-reduce, 2 ranks", 2), ("ps", "dense server, 2+1", 2)):
    runs = [json.loads(l) for l in open(f"{work}/{name}{rows}.jsonl")]
    rate = statistics.median(r["samples_per_s"] for r in runs)
    sent = (2 * (ranks - 1) / ranks if name == "dp" else 1) * 4 * params
    print(f"scale {b:,} id rows ({params / 1e6:.1f} M parameters), {what}: {rate:.0f} samples/s, "
          f"{sent / 1e6:.0f} MB sent a rank a step, runs {len(runs)}")
PY
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
fi
