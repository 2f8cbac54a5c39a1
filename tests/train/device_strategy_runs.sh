#!/usr/bin/env bash
# The strategies besides data parallelism on a device (issue 22): pipeline stages, tensor ways
# and parameter servers with train.device = cuda, on the simulated CUDA device
# (SHARDFLOW_SIMULATE_CUDA=1: the CUDA backend's host twin, device tensors that refuse host
# reads), against the same runs on the CPU, on the Fashion-MNIST fixture shards (1000 records).
# Prints "device_strategy_runs.sh MODE: ok" last when every check passed.
#   device_strategy_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
# Every device run reports each rank's device memory at its fullest (device_peak_mib), a CPU
# run none.
#   pipeline  2 stages (1f1b, 4 micro-batches), batch norm, clipping: the device run tracks the
#             CPU run (test loss within 1e-4 relative, accuracy within 0.5 points); a run without
#             batch norm stopped at step 21 and resumed ends bit-identical to an uninterrupted
#             one; shardflow-predict on 2 stages on the device gives the CPU's classes.
#   tensor    2 tensor ways of a CNN with dropout (convolutions and dense layers split, the
#             ways' sums staged through host memory; each way holds its half of the split
#             layers' parameters): tracks the CPU run; its checkpoint
#             resumes on the CPU on one rank (data parallel) for another epoch, and predicts on
#             the device on 2 ways with the classes of the CPU on one rank.
#   replicas  4 ranks, 2 replicas x 2 stages: the replicas' gradient average through the device
#             all-reduce seam (comm/device_allreduce.hpp; its simulated stand-in for NCCL) and
#             staged through host memory (dist.device_allreduce = host) give the same test loss
#             exactly, and track the CPU run.
#   parameter_server  3 ranks, 2 workers on the device + 1 server on the CPU, synchronous
#             (max_staleness 0), over both transports (p2p, rma): tracks the CPU run; a run
#             stopped at step 21 and resumed (rma) ends bit-identical to an uninterrupted one.
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

shards="$src/tests/fixtures/tfrecord/fmnist-test-*-of-*.tfrecord"
common=(--data.files="$shards" --eval.files="$shards" --train.batch_size=32
  --train.warmup_steps=0)

sim() { SHARDFLOW_SIMULATE_CUDA=1 "$@"; }

# tracks CPU_DIR DEVICE_DIR: the device run's summary tracks the CPU run's.
tracks() {
  $py - "$1/summary.json" "$2/summary.json" <<'PY'
import json, sys
cpu, dev = (json.load(open(p)) for p in sys.argv[1:3])
assert dev["device"] == "cuda" and cpu["device"] == "cpu", (dev["device"], cpu["device"])
assert dev["strategy"] == cpu["strategy"], (dev["strategy"], cpu["strategy"])
assert dev["grid"] == cpu["grid"], (dev["grid"], cpu["grid"])
rel = abs(dev["test_loss"] - cpu["test_loss"]) / abs(cpu["test_loss"])
print(f"{dev['grid']}: test loss cpu {cpu['test_loss']:.8f} device {dev['test_loss']:.8f} "
      f"(rel {rel:.2e}); accuracy cpu {cpu['test_accuracy']:.4f} device {dev['test_accuracy']:.4f}")
assert rel < 1e-4 and abs(dev["test_accuracy"] - cpu["test_accuracy"]) <= 0.005
assert cpu["test_accuracy"] > 0.5, "the model did not learn: the comparison would say little"
# Device memory per rank: every rank that computes on the device held some (a parameter
# server, on the CPU, none); a CPU run reports none.
peaks = dev["device_peak_mib"]
assert "device_peak_mib" not in cpu and len(peaks) == len(dev["peak_rss_mib"]), peaks
servers = dev.get("strategy_figures", {}).get("servers", 0)
assert sum(p > 0 for p in peaks) == len(peaks) - servers, peaks
print(f"device memory per rank (MiB): {peaks}")
PY
}

# same_loss A B...: the runs' test losses are equal, exactly.
same_loss() {
  $py - "$@" <<'PY'
import json, sys
losses = [json.load(open(p + "/summary.json"))["test_loss"] for p in sys.argv[1:]]
print("test loss " + ", ".join(f"{p} {l!r}" for p, l in zip(sys.argv[1:], losses)))
assert len(set(losses)) == 1
PY
}

# predict NP LOG CHECKPOINTS OUT ARGS...: shardflow-predict on the fixture.
predict() {
  local np=$1 log=$2 ckpt=$3 out=$4
  shift 4
  timeout -k 5 60 "${mpi[@]}" -np "$np" "$bin/shardflow-predict" \
    --config "$src/configs/fmnist_mlp.ini" --checkpoint "$ckpt" --input "$shards" \
    --output "$out" --train.threads=1 "$@" >"$log" 2>&1
}

# same_classes CPU_CSV DEVICE_CSV: every record's class equal, probabilities within 1e-5.
same_classes() { $py "$here/same_predictions.py" "$1" "$2"; }

# stop_and_resume NP FULL_DIR ARGS...: on the device, a run of ARGS stopped at step 21 and
# resumed ends with FULL_DIR's test loss, exactly.
stop_and_resume() {
  local np=$1 full=$2
  shift 2
  sim run_train "$np" cut.log "${common[@]}" "$@" --train.device=cuda --train.max_steps=21 \
    --output cut || { cat cut.log; fail "the run stopped at step 21"; }
  sim run_train "$np" cut2.log "${common[@]}" "$@" --train.device=cuda --output cut --resume ||
    { cat cut2.log; fail "the resumed run"; }
  grep -q "resuming from .* at step 21" cut2.log || { cat cut2.log; fail "did not resume at 21"; }
  same_loss "$full" cut || fail "the resumed run differs from the uninterrupted one"
}

case "$mode" in
pipeline)
  pp=(--dist.pipeline_stages=2 --dist.micro_batches=4 --train.epochs=2 --train.clip_norm=1.0
    --model.spec='flatten, dense:16, batchnorm, relu, dense:10')
  run_train 2 cpu.log "${common[@]}" "${pp[@]}" --output cpu || { cat cpu.log; fail "cpu run"; }
  sim run_train 2 dev.log "${common[@]}" "${pp[@]}" --train.device=cuda --output dev ||
    { cat dev.log; fail "2 stages on the simulated device failed"; }
  tracks cpu dev || { cat dev.log; fail "2 stages on the device do not track the CPU"; }
  # Stopped mid-epoch and resumed on the device: exactly the uninterrupted run.
  plain=(--dist.pipeline_stages=2 --dist.micro_batches=4 --train.epochs=2
    --model.spec='flatten, dense:16, relu, dense:10')
  sim run_train 2 full.log "${common[@]}" "${plain[@]}" --train.device=cuda --output full ||
    { cat full.log; fail "the uninterrupted run"; }
  stop_and_resume 2 full "${plain[@]}"
  # Prediction on 2 stages on the device: the classes of the CPU on 2 stages.
  spec=(--model.spec='flatten, dense:16, relu, dense:10' --dist.pipeline_stages=2)
  predict 2 pc.log full/checkpoints pc.csv "${spec[@]}" || { cat pc.log; fail "predict, cpu"; }
  sim predict 2 pd.log full/checkpoints pd.csv "${spec[@]}" --train.device=cuda ||
    { cat pd.log; fail "predict on 2 stages on the device"; }
  grep -q "predicted 1000 records on 2 ranks (1 replica x 2 stages x 1 tensor way)" pd.log ||
    { cat pd.log; fail "no pipelined predict line"; }
  same_classes pc.csv pd.csv || fail "pipelined predictions on the device differ from the CPU's"
  ;;
tensor)
  # (No max pooling: over a few steps its ties flip under the last bit of rounding, the host
  # twin's GEMM sums in another order than the CPU's, and the runs part by ~1e-4 with or
  # without tensor ways; the pooling kernels themselves are compared in core's twin tests.)
  layers='conv:8:3x3:same:col, relu, conv:8:3x3:same:row, relu, flatten'
  cnn=(--model.spec="$layers, dense:32:col, relu, dropout:0.2, dense:10:row" --train.epochs=1)
  tp=(--dist.tensor_parallel=2)
  run_train 2 cpu.log "${common[@]}" "${cnn[@]}" "${tp[@]}" --output cpu ||
    { cat cpu.log; fail "cpu run"; }
  sim run_train 2 dev.log "${common[@]}" "${cnn[@]}" "${tp[@]}" --train.device=cuda \
    --output dev || { cat dev.log; fail "2 tensor ways on the simulated device failed"; }
  tracks cpu dev || { cat dev.log; fail "2 tensor ways on the device do not track the CPU"; }
  $py - dev/summary.json <<'PY' || fail "no tensor all-reduce time"
import json, sys
f = json.load(open(sys.argv[1]))["strategy_figures"]
assert f["tensor_allreduce_s"] > 0, f
PY
  grep -q "grid: rank 1: replica 0, stage 0, way 1 on .*, 100874 parameters" dev.log ||
    { cat dev.log; fail "way 1 does not hold its half of the split layers (100874 of the whole 201730)"; }
  # The device's checkpoint (2 ways) resumes on the CPU on one rank for a second epoch.
  cp -r dev host
  run_train 1 host.log "${common[@]}" "${cnn[@]}" --train.epochs=2 --output host --resume ||
    { cat host.log; fail "the device checkpoint did not resume on the CPU"; }
  grep -q "resuming from .* at step 32" host.log || { cat host.log; fail "did not resume at 32"; }
  # Predicting from it on 2 ways on the device: the classes of the CPU on one rank.
  predict 1 pc.log dev/checkpoints pc.csv "${cnn[@]}" || { cat pc.log; fail "predict, cpu"; }
  sim predict 2 pd.log dev/checkpoints pd.csv "${cnn[@]}" "${tp[@]}" --train.device=cuda ||
    { cat pd.log; fail "predict on 2 tensor ways on the device"; }
  same_classes pc.csv pd.csv || fail "tensor-parallel predictions on the device differ"
  ;;
replicas)
  grid=(--dist.pipeline_stages=2 --train.epochs=2
    --model.spec='flatten, dense:16, batchnorm, relu, dense:10')
  run_train 4 cpu.log "${common[@]}" "${grid[@]}" --output cpu || { cat cpu.log; fail "cpu run"; }
  sim run_train 4 dev.log "${common[@]}" "${grid[@]}" --train.device=cuda --output dev ||
    { cat dev.log; fail "2 replicas x 2 stages on the simulated device failed"; }
  grep -q "gradients: averaged over the 2 replicas on the device (simulated)" dev.log ||
    { cat dev.log; fail "the replicas did not average through the device all-reduce seam"; }
  sim run_train 4 host.log "${common[@]}" "${grid[@]}" --train.device=cuda \
    --dist.device_allreduce=host --output host || { cat host.log; fail "staged run"; }
  ! grep -q "on the device (simulated)" host.log || { cat host.log; fail "host did not stage"; }
  tracks cpu dev || { cat dev.log; fail "2 replicas x 2 stages on the device do not track the CPU"; }
  same_loss dev host || fail "the device all-reduce and host staging differ"
  ;;
parameter_server)
  ps=(--dist.strategy=parameter_server --dist.ps_ranks=1 --dist.max_staleness=0 --train.epochs=2
    --model.spec='flatten, dense:16, relu, dense:10')
  for transport in p2p rma; do
    run_train 3 "cpu_$transport.log" "${common[@]}" "${ps[@]}" --dist.ps_transport=$transport \
      --output "cpu_$transport" || { cat "cpu_$transport.log"; fail "cpu run over $transport"; }
    sim run_train 3 "dev_$transport.log" "${common[@]}" "${ps[@]}" --dist.ps_transport=$transport \
      --train.device=cuda --output "dev_$transport" ||
      { cat "dev_$transport.log"; fail "workers on the simulated device over $transport failed"; }
    tracks "cpu_$transport" "dev_$transport" ||
      { cat "dev_$transport.log"; fail "workers on the device over $transport do not track the CPU"; }
  done
  $py - dev_p2p/summary.json <<'PY' || fail "the server (rank 2) reports device memory"
import json, sys
peaks = json.load(open(sys.argv[1]))["device_peak_mib"]
assert peaks[2] == 0 and peaks[0] > 0 and peaks[1] > 0, peaks
PY
  grep -q "parameter server: the workers compute on cuda .*; the servers hold their slices and update them on the CPU" dev_p2p.log ||
    { cat dev_p2p.log; fail "no line saying where the workers and servers compute"; }
  stop_and_resume 3 dev_rma "${ps[@]}" --dist.ps_transport=rma
  ;;
*) fail "unknown mode" ;;
esac
echo "$script $mode: ok"
