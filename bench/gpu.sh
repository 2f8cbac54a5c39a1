#!/usr/bin/env bash
# GPU training fed by the input pipeline (issue 22), not CI: shardflow-train-cuda trains the
# configs/ MLP and CNN on Fashion-MNIST (TFRecords made once from the Debian package), with the
# next batch copied onto the GPU during the current step (train.device_prefetch = true) and
# without, interleaved (A B A B ...). Per run, from summary.json: samples/s, the GPU busy
# fraction (device_input.gpu_busy_fraction: the compute stream holding a step's work over wall
# time), the compute stream's wait for input copies (h2d_stall_s) and the batches copied ahead.
# Variants cudnn-off: pooling, activations, batch norm and the LSTM on our kernels instead of
# cuDNN's (SHARDFLOW_CUDNN=off); cudnn-no-bn: batch norm alone on ours (cuDNN sees our (N, C)
# rows as N x C x 1 x 1), to decide which the GPU should run (--models cnn,resnet shows it).
# With --ranks N > 1 (one GPU per rank) it adds dist.device_allreduce = nccl against host (the
# gradients staged through host memory). Prints every run, then per model and variant the
# medians and the ratio of each variant's samples/s to the first's. For NCCL's bus bandwidth
# alone: mpirun -np N build/bin/shardflow-bench gpu --allreduce. With --strategies and N > 1,
# the other strategies beside data parallelism: N pipeline stages (4 micro-batches, 1f1b) and
# parameter servers (one server on the CPU, N - 1 workers on GPUs; synchronous).
#   bench/gpu.sh [--reps 3] [--models mlp,cnn] [--epochs 1] [--ranks 1] [--strategies]
#                [--simulate] [--bin DIR] [--work DIR]
# --simulate: shardflow-train on the simulated device (SHARDFLOW_SIMULATE_CUDA=1) for a few
# steps: it checks this script's path on a machine without a GPU. Its figures are not GPU
# figures, and the device does not time its streams (no busy fraction).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin work=/tmp/shardflow-gpu-bench reps=3 models=mlp,cnn epochs=1 ranks=1
simulate=0 strategies=0
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --simulate) simulate=1; shift ;;
    --strategies) strategies=1; shift ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "gpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
py=/usr/bin/python3
program=$bin/shardflow-train-cuda
extra=()
if [ "$simulate" = 1 ]; then
  program=$bin/shardflow-train
  export SHARDFLOW_SIMULATE_CUDA=1
  extra=(--train.max_steps=6)
fi
[ -x "$program" ] || { echo "gpu.sh: $program is missing (a build with nvcc makes it)" >&2; exit 2; }
mkdir -p "$work/runs"
cd "$work"
if ! ls data/fmnist-test-*.tfrecord >/dev/null 2>&1; then
  for split in train test; do
    "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=$split \
      --output.shards=8 --output.path=data/fmnist-$split >convert.log 2>&1 ||
      { cat convert.log; exit 1; }
  done
fi
variants=("prefetch" "no-prefetch" "cudnn-off" "cudnn-no-bn")
[ "$ranks" -gt 1 ] && variants+=("host-allreduce")
[ "$ranks" -gt 1 ] && [ "$strategies" = 1 ] && variants+=("pipeline" "parameter-server")
flags_of() {
  case "$1" in
    prefetch) echo "--train.device_prefetch=true --dist.device_allreduce=auto" ;;
    no-prefetch) echo "--train.device_prefetch=false --dist.device_allreduce=auto" ;;
    cudnn-off|cudnn-no-bn) echo "--train.device_prefetch=true --dist.device_allreduce=auto" ;;
    host-allreduce) echo "--train.device_prefetch=true --dist.device_allreduce=host" ;;
    pipeline) echo "--dist.pipeline_stages=$ranks --dist.micro_batches=4 --dist.schedule=1f1b" ;;
    parameter-server) echo "--dist.strategy=parameter_server --dist.ps_ranks=1 --dist.max_staleness=0" ;;
  esac
}
# The launcher's environment for a variant: cudnn-off keeps pooling, activations and batch norm
# on our kernels (SHARDFLOW_CUDNN=off; docs/design.md decision 63), convolutions on cuDNN.
env_of() {
  case "$1" in
    cudnn-off) echo "-x SHARDFLOW_CUDNN=off" ;;
    cudnn-no-bn) echo "-x SHARDFLOW_CUDNN=pool,act,lstm" ;;
  esac
}
results=$work/results.jsonl
: >"$results"
for model in ${models//,/ }; do
  for rep in $(seq "$reps"); do
    for variant in "${variants[@]}"; do
      out=runs/$model-$variant-$rep
      rm -rf "$out"
      # shellcheck disable=SC2046
      "${mpi[@]}" $(env_of "$variant") -np "$ranks" "$program" --config "$src/configs/fmnist_$model.ini" \
        --data.files="data/fmnist-train-*.tfrecord" --eval.files="data/fmnist-test-*.tfrecord" \
        --train.epochs="$epochs" --train.device=cuda $(flags_of "$variant") "${extra[@]}" \
        --no-progress --output "$out" >"$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
      $py - "$out/summary.json" "$model" "$variant" "$rep" >>"$results" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = s.get("device_input", {})
print(json.dumps({"model": sys.argv[2], "variant": sys.argv[3], "rep": int(sys.argv[4]),
                  "samples_per_s": s["samples_per_s"], "test_accuracy": s.get("test_accuracy"),
                  "gpu_busy_fraction": d.get("gpu_busy_fraction"),
                  "h2d_stall_s": d.get("h2d_stall_s"), "overlapped": d.get("overlapped"),
                  "batches": d.get("batches"), "stage_s": d.get("stage_s")}))
PY
      tail -1 "$results"
    done
  done
done
$py - "$results" "$simulate" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
if sys.argv[2] == "1":
    print("simulated device: the path ran; these are not GPU figures")
by = {}
for r in rows:
    by.setdefault((r["model"], r["variant"]), []).append(r)
for model in dict.fromkeys(r["model"] for r in rows):
    first = None
    for (m, variant), runs in by.items():
        if m != model:
            continue
        sps = statistics.median(r["samples_per_s"] for r in runs)
        first = first or sps
        busy = [r["gpu_busy_fraction"] for r in runs if r["gpu_busy_fraction"] is not None]
        ahead = sum(r["overlapped"] or 0 for r in runs), sum(r["batches"] or 0 for r in runs)
        print(f"{model:6} {variant:15} {sps:10.0f} samples/s ({sps / first:.2f}x)"
              f"  GPU busy {statistics.median(busy):.3f}" if busy else
              f"{model:6} {variant:15} {sps:10.0f} samples/s ({sps / first:.2f}x)  GPU busy n/a",
              f"  copied ahead {ahead[0]}/{ahead[1]}")
PY
