#!/usr/bin/env bash
# Click-through models measured (issue 51), configs/ctr_wide_deep.ini on scripts/make_ctr.py's
# table (made first when data/ctr is missing: 300,000 training and 50,000 evaluation rows).
#   bench/ctr.sh [--bin DIR] [--data DIR] [--reps N] [--steps N] [--rows LIST]
#                [--budget-mb N] [--only quality,scale]
#   quality  one epoch on 2 ranks (data-parallel), on 1 rank, and asynchronously through sparse
#            tables on a parameter server (2 workers + 1 server, dist.max_staleness = -1): the
#            exact test AUC and log loss against the rule's own (ctr-meta.json's best_auc and
#            best_log_loss) and the 1-rank run's, the time, and the pushes' staleness histogram.
#   scale    the same model with its id space resized to each of --rows (default 1000000,
#            10000000, 16777180: every id entry hashed into rows / 28 buckets; 16,777,180 is
#            the largest such space float32 id slots hold, decision 80), --steps steps
#            (default 60) of 512 rows a worker (a shuffle buffer of 2,048 rows, so that filling
#            it does not weigh on so few steps), three ways on 4 ranks: data-parallel all-reduce
#            (4 workers, replicated tables), the dense parameter server (3 workers + 1 server,
#            whole tables in the slices: dist.ps_tables = dense) and sparse tables on the server
#            (3 workers + 1 server, dist.ps_tables = sparse), all synchronous; samples/s (median
#            of --reps), and the bytes a worker moves a step: all-reduce by the algorithm
#            (sent: 2 (P-1)/P x 4 bytes a parameter), the parameter servers as counted by the
#            strategy (summary.json wire_mib_per_step: pulled and pushed, both ways). Every rank
#            may hold --budget-mb of model state (train.max_memory_mb, default 4096): a way whose
#            replica or server rows need more refuses, and prints its one line.
# Runs interleaved, medians reported; prints the load average with each set.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin data=$here/data/ctr reps=3 steps=60 rows=1000000,10000000,16777180
budget=4096 only=quality,scale
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --budget-mb) budget=$2; shift 2 ;;
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

# run NAME NP ARGS...: one run; appends its summary.json to NAME.jsonl (a refusal: its error
# line to NAME.refused, once).
run() {
  local name=$1 np=$2
  shift 2
  rm -rf "$work/out"
  [ -f "$work/$name.refused" ] && return 0
  if ! "${mpi[@]}" -np "$np" "$bin/shardflow-train" --config "$config" "${files[@]}" --no-progress \
    --checkpoint.every_epochs=0 --output "$work/out" "$@" >"$work/log" 2>&1; then
    if grep -q "max_memory_mb" "$work/log"; then
      grep -m1 "error" "$work/log" >"$work/$name.refused"
      return 0
    fi
    tail -20 "$work/log"
    exit 1
  fi
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
    run qs 3 --dist.strategy=parameter_server --dist.ps_ranks=1 --dist.max_staleness=-1
  done
  python3 - "$work" "$data/ctr-meta.json" <<'PY'
import json, statistics, sys
work, meta = sys.argv[1], json.load(open(sys.argv[2]))
print(f"quality: the rule's own AUC {meta['best_auc']['eval']:.4f}, log loss "
      f"{meta['best_log_loss']['eval']:.4f} on the {meta['eval_rows']} evaluation rows")
one = None
for name, what in (("q1", "1 rank"), ("q2", "2 ranks, data-parallel"),
                   ("qs", "2 workers + 1 server, sparse tables, asynchronous")):
    runs = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    auc = statistics.median(r["test_auc"] for r in runs)
    loss = statistics.median(r["test_loss"] for r in runs)
    wall = statistics.median(r["wall_s"] for r in runs)
    one = auc if one is None else one
    print(f"  {what}: test AUC {auc:.4f} ({auc - meta['best_auc']['eval']:+.4f} to the rule's, "
          f"{auc - one:+.4f} to 1 rank's), log loss {loss:.4f}, {wall:.1f} s for one epoch, "
          f"runs {len(runs)}")
    if name == "qs":
        h = runs[len(runs) // 2]["staleness_histogram"]
        total = sum(h)
        bins = ", ".join(f"{i}: {c / total:.1%}" for i, c in enumerate(h) if c > 0)
        print(f"    staleness (updates between a push's pull and its apply): {bins}")
PY
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
if [[ ,$only, == *,scale,* ]]; then
  for r in ${rows//,/ }; do
    resized "$r"
    common=("--data.assemble=$assemble" "--eval.assemble=$assemble" "--model.spec=$spec"
      --eval.files= --train.max_steps="$steps" --data.shuffle_buffer=2048
      --train.max_memory_mb="$budget")
    ps=(--dist.strategy=parameter_server --dist.ps_ranks=1 --dist.max_staleness=0)
    for _ in $(seq "$reps"); do
      run "dp$r" 4 "${common[@]}"
      run "ps$r" 4 "${common[@]}" "${ps[@]}" --dist.ps_tables=dense
      run "sp$r" 4 "${common[@]}" "${ps[@]}" --dist.ps_tables=sparse
    done
    python3 - "$work" "$r" <<'PY'
import json, os, statistics, sys
work, rows = sys.argv[1], int(sys.argv[2])
b = rows // 28 * 28
params = b * 16 + b * 2 + (13 + 28 * 16) * 256 + 256 + 256 * 128 + 128 + 128 * 2 + 2
rates = {}
for name, what in (("dp", "all-reduce, 4 workers"), ("ps", "dense server, 3+1"),
                   ("sp", "sparse tables on the server, 3+1")):
    head = f"scale {b:,} id rows ({params / 1e6:.1f} M parameters), {what}:"
    if os.path.exists(f"{work}/{name}{rows}.refused"):
        print(f"{head} refused: {open(f'{work}/{name}{rows}.refused').read().strip()}")
        continue
    runs = [json.loads(l) for l in open(f"{work}/{name}{rows}.jsonl")]
    rates[name] = rate = statistics.median(r["samples_per_s"] for r in runs)
    if name == "dp":
        wire = f"{2 * 3 / 4 * 4 * params / 2**20:.0f} MiB sent a worker a step (by the algorithm)"
    else:
        mib = statistics.median(r["strategy_figures"]["wire_mib_per_step"] for r in runs)
        wire = f"{mib:.2f} MiB pulled + pushed a worker a step (counted)"
        if name == "sp":
            ids = statistics.median(r["strategy_figures"]["sparse_rows_per_step"] for r in runs)
            wire += f", {ids:.0f} distinct rows a step"
    print(f"{head} {rate:.0f} samples/s, {wire}, runs {len(runs)}")
if "sp" in rates and "dp" in rates:
    print(f"  sparse / all-reduce: {rates['sp'] / rates['dp']:.2f}x")
PY
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
fi
