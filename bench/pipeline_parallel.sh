#!/usr/bin/env bash
# Model parallelism measured (issue 13): the pipeline bubble next to (S-1)/(M+S-1), samples/s of
# pipeline and hybrid grids next to pure data parallelism on the same ranks, and peak memory per
# rank against the number of stages.
#   bench/pipeline_parallel.sh [--bin DIR] [--data DIR] [--reps N] [--steps N] [--only a,b,c]
# --bin: shardflow-train's folder (default build/bin); --data: the folder holding data/ with the
# Fashion-MNIST shards ./run.sh makes (default the checkout); --only: bubble, throughput, memory.
# Runs are interleaved (every configuration once per repetition) and medians reported.
#   bubble      a 5-layer MLP (4 x dense:1024, even stages) at S = 2 and 4 and M = 1..16
#               (gpipe below M = S, 1f1b from there), batch 256 per replica: the measured bubble
#               (1 - compute / schedule time, mean over ranks) and the ideal.
#   throughput  the same model on 2 and 4 ranks: data_parallel vs pipeline vs hybrid grids.
#   memory      configs/fmnist_wide_mlp.ini (18.4 M parameters, Adam) at S = 1, 2, 4: the largest
#               and smallest rank's peak resident memory (summary.json peak_rss_mib).
# This machine has 2 cores: 4 ranks share them (oversubscribed), so 4-rank figures show the
# schedule's behaviour, not a speed-up.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin data=$here reps=3 steps=30 only=bubble,throughput,memory
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "pipeline_parallel.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1 SHARDFLOW_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spec="flatten, dense:1024, relu, dense:1024, relu, dense:1024, relu, dense:1024, relu, dense:10"

# run NAME NP ARGS...: one training run; appends its summary.json as one line to NAME.jsonl.
run() {
  local name=$1 np=$2
  shift 2
  rm -rf "$work/out"
  "${mpi[@]}" -np "$np" "$bin/shardflow-train" --config "$here/configs/fmnist_mlp.ini" \
    --data.files="$data/data/fmnist-train-*-of-*.tfrecord" --eval.files= --no-progress \
    --train.max_steps="$steps" --train.threads=1 --checkpoint.every_epochs=0 \
    --output "$work/out" "$@" >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
    "$work/out/summary.json" >>"$work/$name.jsonl"
}

# median NAME EXPR: the median over NAME's runs of a Python expression of summary `s`.
median() {
  python3 - "$work/$1.jsonl" "$2" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
vals = [eval(sys.argv[2], {}, {"s": s}) for s in rows]
print(f"{statistics.median(vals):.4g}")
PY
}

want() { [[ ",$only," == *",$1,"* ]]; }

if want bubble; then
  configs=()
  for s in 2 4; do
    for m in 1 2 4 8 16; do
      sched=1f1b
      [ "$m" -lt "$s" ] && sched=gpipe
      configs+=("b_${s}_${m}_${sched}")
    done
  done
  for ((r = 0; r < reps; r++)); do
    for c in "${configs[@]}"; do
      IFS=_ read -r _ s m sched <<<"$c"
      run "$c" "$s" --model.spec="$spec" --train.batch_size=256 --dist.pipeline_stages="$s" \
        --dist.micro_batches="$m" --dist.schedule="$sched"
    done
  done
  echo "| S | M | schedule | ideal bubble (S-1)/(M+S-1) | measured bubble | samples/s |"
  echo "|---|---|---|---|---|---|"
  for c in "${configs[@]}"; do
    IFS=_ read -r _ s m sched <<<"$c"
    echo "| $s | $m | $sched | $(median "$c" 's["strategy_figures"]["ideal_bubble_fraction"]') |" \
      "$(median "$c" 's["strategy_figures"]["bubble_fraction"]') | $(median "$c" 's["samples_per_s"]') |"
  done
  echo
fi

if want throughput; then
  configs=(t_2_1 t_2_2 t_4_1 t_4_2 t_4_4)  # t_RANKS_STAGES
  for ((r = 0; r < reps; r++)); do
    for c in "${configs[@]}"; do
      IFS=_ read -r _ n s <<<"$c"
      run "$c" "$n" --model.spec="$spec" --train.batch_size=$((512 * s / n)) \
        --dist.pipeline_stages="$s" --dist.micro_batches=$((s == 1 ? 1 : 4 * s))
    done
  done
  echo "| ranks | grid | global batch | samples/s | comm fraction |"
  echo "|---|---|---|---|---|"
  for c in "${configs[@]}"; do
    IFS=_ read -r _ n s <<<"$c"
    echo "| $n | $(python3 -c "import json; s=json.loads(open('$work/$c.jsonl').readline()); print(s.get('grid', 'data_parallel'))") |" \
      "512 | $(median "$c" 's["samples_per_s"]') | $(median "$c" 's["comm_fraction"]') |"
  done
  echo
fi

if want memory; then
  configs=(m_1 m_2 m_4)
  for ((r = 0; r < reps; r++)); do
    for c in "${configs[@]}"; do
      s=${c#m_}
      rm -rf "$work/out"
      "${mpi[@]}" -np "$s" "$bin/shardflow-train" --config "$here/configs/fmnist_wide_mlp.ini" \
        --data.files="$data/data/fmnist-train-*-of-*.tfrecord" --eval.files= --no-progress \
        --train.max_steps=10 --train.threads=1 --train.max_memory_mb=0 \
        --checkpoint.every_epochs=0 --dist.pipeline_stages="$s" --output "$work/out" \
        >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
      python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
        "$work/out/summary.json" >>"$work/$c.jsonl"
    done
  done
  echo "| stages | ranks | largest rank peak RSS (MiB) | smallest rank peak RSS (MiB) |"
  echo "|---|---|---|---|"
  for c in "${configs[@]}"; do
    s=${c#m_}
    echo "| $s | $s | $(median "$c" 'max(s["peak_rss_mib"])') | $(median "$c" 'min(s["peak_rss_mib"])') |"
  done
fi
