#!/usr/bin/env bash
# Parameter-server training measured (issue 14): throughput with a straggler, data-parallel vs
# asynchronous parameter server on the same workers, and test accuracy against data-parallel.
#   bench/parameter_server.sh [--bin DIR] [--data DIR] [--reps N] [--steps N] [--slow MS]
#                             [--only straggler,accuracy,transport]
# --data: the folder holding data/ (./run.sh's Fashion-MNIST shards); --slow: the straggler's
# extra milliseconds per step, or auto (default): twice a parameter-server worker's step time
# measured in a first unslowed run, so that the slowed worker is 3x slower.
#   straggler  configs/fmnist_mlp.ini, --steps steps per worker: data_parallel on 2 ranks vs
#              parameter_server with 2 workers + 1 server (asynchronous) with static and with
#              dynamic sharding (dist.sharding), each with and without rank 1 slowed
#              (SHARDFLOW_TEST_FAULT=slow:1:MS); samples/s of the job (its samples over the
#              slowest rank's time) and the aggregate (each worker's own rate, summed).
#   accuracy   3 epochs: data_parallel on 2 ranks, parameter_server 2 workers + 1 server and
#              2 workers + 2 servers (asynchronous) and 2 + 1 synchronous; data_parallel on 3
#              ranks and parameter_server 3 workers + 1 server; 2 + 1 and 3 + 1 with dynamic
#              sharding (a_psd21, a_psd31); test accuracy.
#   transport  --steps steps, 2 workers + 1 server, asynchronous and synchronous, over messages
#              (dist.ps_transport=p2p) and one-sided windows (rma): samples/s.
# Runs interleaved, medians reported.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin data=$here reps=3 steps=300 slow=auto only=straggler,accuracy,transport
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --slow) slow=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "parameter_server.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1 SHARDFLOW_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME NP FAULT ARGS...: one run; appends its summary.json to NAME.jsonl.
run() {
  local name=$1 np=$2 fault=$3
  shift 3
  rm -rf "$work/out"
  SHARDFLOW_TEST_FAULT=$fault "${mpi[@]}" -np "$np" "$bin/shardflow-train" \
    --config "$here/configs/fmnist_mlp.ini" --data.files="$data/data/fmnist-train-*-of-*.tfrecord" \
    --no-progress --train.threads=1 --checkpoint.every_epochs=0 --output "$work/out" "$@" \
    >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
    "$work/out/summary.json" >>"$work/$name.jsonl"
}

median() {  # NAME EXPR
  python3 - "$work/$1.jsonl" "$2" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{statistics.median(eval(sys.argv[2], {}, {'s': s}) for s in rows):.4g}")
PY
}
want() { [[ ",$only," == *",$1,"* ]]; }
ps=(--dist.strategy=parameter_server --dist.ps_ranks=1)

if want straggler; then
  psd=("${ps[@]}" --dist.sharding=dynamic)
  if [ "$slow" = auto ]; then  # a worker's step: 2 workers x 64 samples per step of the job
    run ps 3 "" --eval.files= --train.max_steps="$steps" "${ps[@]}"
    slow=$(python3 -c "print(round(2 * 1000 * 128 / $(median ps 's["samples_per_s"]')))")
    echo "straggler: +$slow ms a step (twice a parameter-server worker's step, measured)"
    rm -f "$work/ps.jsonl"
  fi
  for ((r = 0; r < reps; r++)); do
    run dp 2 "" --eval.files= --train.max_steps="$steps"
    run dp_slow 2 "slow:1:$slow" --eval.files= --train.max_steps="$steps"
    run ps 3 "" --eval.files= --train.max_steps="$steps" "${ps[@]}"
    run ps_slow 3 "slow:1:$slow" --eval.files= --train.max_steps="$steps" "${ps[@]}"
    run psd 3 "" --eval.files= --train.max_steps="$steps" "${psd[@]}"
    run psd_slow 3 "slow:1:$slow" --eval.files= --train.max_steps="$steps" "${psd[@]}"
  done
  echo "| strategy | worker 1 | samples/s (job) | aggregate samples/s | job slowed/unslowed | aggregate slowed/unslowed |"
  echo "|---|---|---|---|---|---|"
  for c in dp ps psd; do
    for v in "" _slow; do
      ratio_job="" ratio_agg=""
      if [ -n "$v" ]; then
        ratio_job=$(python3 -c "print(f'{$(median "$c$v" 's["samples_per_s"]') / $(median "$c" 's["samples_per_s"]'):.3f}')")
        ratio_agg=$(python3 -c "print(f'{$(median "$c$v" 's["aggregate_samples_per_s"]') / $(median "$c" 's["aggregate_samples_per_s"]'):.3f}')")
      fi
      label=normal
      [ -n "$v" ] && label="slowed +${slow} ms/step"
      declare -A names=([dp]="data_parallel, 2 ranks" [ps]="parameter_server 2 + 1, static"
        [psd]="parameter_server 2 + 1, dynamic")
      echo "| ${names[$c]} | $label | $(median "$c$v" 's["samples_per_s"]') |" \
        "$(median "$c$v" 's["aggregate_samples_per_s"]') | $ratio_job | $ratio_agg |"
    done
  done
  echo
fi

if want transport; then
  for ((r = 0; r < reps; r++)); do
    for t in p2p rma; do
      run "t_${t}_async" 3 "" --eval.files= --train.max_steps="$steps" "${ps[@]}" --dist.ps_transport=$t
      run "t_${t}_sync" 3 "" --eval.files= --train.max_steps="$steps" "${ps[@]}" \
        --dist.ps_transport=$t --dist.max_staleness=0
    done
  done
  echo "| mode | p2p samples/s | rma samples/s | rma / p2p |"
  echo "|---|---|---|---|"
  for m in async sync; do
    p=$(median "t_p2p_$m" 's["samples_per_s"]') q=$(median "t_rma_$m" 's["samples_per_s"]')
    echo "| $m | $p | $q | $(python3 -c "print(f'{$q / $p:.3f}')") |"
  done
  echo
fi

if want accuracy; then
  for ((r = 0; r < reps; r++)); do
    run a_dp 2 "" --train.epochs=3
    run a_ps21 3 "" --train.epochs=3 "${ps[@]}"
    run a_ps22 4 "" --train.epochs=3 --dist.strategy=parameter_server --dist.ps_ranks=2
    run a_sync 3 "" --train.epochs=3 "${ps[@]}" --dist.max_staleness=0
    run a_dp3 3 "" --train.epochs=3
    run a_ps31 4 "" --train.epochs=3 "${ps[@]}"
    run a_psd21 3 "" --train.epochs=3 "${ps[@]}" --dist.sharding=dynamic
    run a_psd31 4 "" --train.epochs=3 "${ps[@]}" --dist.sharding=dynamic
  done
  echo "| run (3 epochs) | test accuracy | samples/s |"
  echo "|---|---|---|"
  for c in a_dp a_ps21 a_ps22 a_sync a_dp3 a_ps31 a_psd21 a_psd31; do
    echo "| $c | $(median "$c" 's["test_accuracy"]') | $(median "$c" 's["samples_per_s"]') |"
  done
fi
