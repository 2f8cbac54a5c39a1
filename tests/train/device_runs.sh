#!/usr/bin/env bash
# Device selection (train.device = cpu | cuda | auto; apps/common/device_choice.hpp) in
# shardflow-train and shardflow-predict, on the Fashion-MNIST fixture shards (1000 records).
# Prints "device_runs.sh MODE: ok" last when every check passed.
#   device_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   cuda_no_gpu  2 ranks, CUDA_VISIBLE_DEVICES="" (no GPU on any machine): exit 2, one error
#                line naming rank 0, the host and what it saw; no MPI_ABORT banner.
#   cuda_unset   2 ranks, CUDA_VISIBLE_DEVICES unset: exit 2 and one error line, which is the
#                no-GPU line on a machine without one, else "not available in this build yet".
#   one_rank     rank 0 asks for cpu, rank 1 for cuda without a GPU: rank 1's line, exit 2 on
#                every rank, nobody left hanging (rank 0 passed its own checks).
#   unknown      train.device = tpu: a config error naming the key and the allowed values.
#   auto         auto without a GPU trains on the CPU (one info line, "device": "cpu" in
#                summary.json); predict with auto predicts, with cuda stops with the one line.
#   simulated    SHARDFLOW_SIMULATE_CUDA=1: 2 ranks train a batch-norm model with clipping on
#                the simulated CUDA device (the backend's host twin; device tensors, gradients
#                reduced through the device all-reduce seam, comm/device_allreduce.hpp, whose
#                stand-in for NCCL there is comm/'s all-reduce in place) and track the same run
#                on the CPU (test loss within 1e-4 relative, accuracy within 0.5 points); the
#                same run staged through host memory (dist.device_allreduce = host) and with
#                the device all-reduce started at the end of backprop give its test loss
#                exactly, as do batches copied when their step starts instead of one step
#                ahead (train.device_prefetch = false) and a run stopped at step 21 and
#                resumed; nccl for a CPU model is a config error; shardflow-predict on the
#                simulated device gives the CPU's classes (probabilities within 1e-5); then
#                resume from its checkpoint for a fourth epoch on the device. (Grids on the
#                device: device_strategy_runs.sh.)
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

shards="$src/tests/fixtures/tfrecord/fmnist-test-*-of-*.tfrecord"
host=$(hostname)
# One epoch of a small model (1000 records / 2 ranks / 32 = 15 steps, a checkpoint at its end).
tiny=(--data.files="$shards" --eval.files= --train.batch_size=32 --train.epochs=1
  --model.spec='flatten, dense:16, relu, dense:10')

# errors LOG: the error lines of LOG.
errors() { grep -c "error" "$1" || true; }

# Not anchored at the line's start: mpiexec forwards the ranks' stdout and stderr separately, so
# one rank's error line can land inside another rank's half-written stdout line (rank 0 prints
# the resolved table while rank 1 fails).
no_gpu_line() {  # no_gpu_line RANK VISIBLE: the regex of rank RANK's line without a GPU
  echo "\[rank $1\] error: invalid argument: rank $1 on $host: train\.device = cuda but no usable GPU \((cudaGetDeviceCount: .+|this build has no CUDA backend .+); CUDA_VISIBLE_DEVICES=$2\) \[key=train\.device\]"
}

case "$mode" in
cuda_no_gpu)
  rc=0
  CUDA_VISIBLE_DEVICES= run_train 2 a.log "${tiny[@]}" --train.device=cuda --output run || rc=$?
  [ "$rc" -eq 2 ] || { cat a.log; fail "exit $rc, wanted 2"; }
  grep -Eq "$(no_gpu_line 0 '""')" a.log || { cat a.log; fail "no one-line GPU error of rank 0"; }
  [ "$(errors a.log)" -eq 1 ] || { cat a.log; fail "$(errors a.log) error lines, wanted 1"; }
  ! grep -q "MPI_ABORT" a.log || { cat a.log; fail "an MPI_ABORT banner"; }
  ;;
cuda_unset)
  unset CUDA_VISIBLE_DEVICES
  rc=0
  run_train 2 a.log "${tiny[@]}" --train.device=cuda --output run || rc=$?
  [ "$rc" -eq 2 ] || { cat a.log; fail "exit $rc, wanted 2"; }
  grep -Eq "$(no_gpu_line 0 '\(unset\)')|train\.device = cuda: this program has no CUDA backend .*run shardflow-train-cuda" a.log ||
    { cat a.log; fail "neither the no-GPU line nor the no-backend line"; }
  [ "$(errors a.log)" -eq 1 ] || { cat a.log; fail "$(errors a.log) error lines, wanted 1"; }
  ;;
one_rank)
  rc=0
  common=(--config "$src/configs/fmnist_mlp.ini" --no-progress --train.threads=1 "${tiny[@]}"
    --output run)
  CUDA_VISIBLE_DEVICES= timeout -k 5 60 "${mpi[@]}" -np 1 "$bin/shardflow-train" "${common[@]}" \
    --train.device=cpu : -np 1 "$bin/shardflow-train" "${common[@]}" --train.device=cuda \
    >a.log 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { cat a.log; fail "exit $rc, wanted 2 (124: a rank hung)"; }
  grep -Eq "$(no_gpu_line 1 '""')" a.log || { cat a.log; fail "no one-line GPU error of rank 1"; }
  [ "$(errors a.log)" -eq 1 ] || { cat a.log; fail "$(errors a.log) error lines, wanted 1"; }
  [ ! -e run/summary.json ] || fail "rank 0 trained"
  ;;
unknown)
  rc=0
  run_train 2 a.log "${tiny[@]}" --train.device=tpu --output run || rc=$?
  [ "$rc" -eq 2 ] || { cat a.log; fail "exit $rc, wanted 2"; }
  grep -Eq "error: invalid argument: .*'tpu'.*train\.device.*cpu.*cuda.*auto" a.log ||
    { cat a.log; fail "no config error naming train.device and its values"; }
  [ "$(errors a.log)" -eq 1 ] || { cat a.log; fail "$(errors a.log) error lines, wanted 1"; }
  ;;
auto)
  CUDA_VISIBLE_DEVICES= run_train 2 a.log "${tiny[@]}" --train.device=auto --output run ||
    { cat a.log; fail "training with auto failed"; }
  [ "$(grep -c 'device: cpu (train\.device = auto: rank 0 on .* sees no usable GPU' a.log)" -eq 1 ] ||
    { cat a.log; fail "not one device line from rank 0"; }
  got=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"])' run/summary.json)
  [ "$got" = cpu ] || fail "summary.json device '$got', wanted cpu"
  predict() {  # predict LOG ARGS...: the run's checkpoint on 2 ranks
    local log=$1
    shift
    CUDA_VISIBLE_DEVICES= timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-predict" \
      --config "$src/configs/fmnist_mlp.ini" --model.spec='flatten, dense:16, relu, dense:10' \
      --checkpoint run/checkpoints --input "$shards" --output p.csv "$@" >"$log" 2>&1
  }
  predict p.log --train.device=auto || { cat p.log; fail "predict with auto failed"; }
  grep -q "device: cpu (train\.device = auto" p.log || { cat p.log; fail "no device line"; }
  rc=0
  predict q.log --train.device=cuda || rc=$?
  [ "$rc" -eq 2 ] || { cat q.log; fail "predict with cuda: exit $rc, wanted 2"; }
  grep -Eq "$(no_gpu_line 0 '""')" q.log || { cat q.log; fail "predict: no one-line GPU error"; }
  ;;
simulated)
  # Three epochs without warm-up: the model learns (about 0.67 accuracy on the fixture).
  bn=(--model.spec='flatten, dense:16, batchnorm, relu, dense:10' --eval.files="$shards"
    --train.clip_norm=1.0 --train.epochs=3 --train.warmup_steps=0)
  run_train 2 cpu.log "${tiny[@]}" "${bn[@]}" --output cpu || { cat cpu.log; fail "cpu run"; }
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 sim.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --output sim || { cat sim.log; fail "training on the simulated device failed"; }
  [ "$(grep -c 'device: cuda (train\.device = cuda: rank 0 on .* takes the simulated device' sim.log)" -eq 1 ] ||
    { cat sim.log; fail "not one device line from rank 0"; }
  $py - cpu/summary.json sim/summary.json <<'PY' || fail "the device run does not track the CPU run"
import json, sys
cpu, sim = (json.load(open(p)) for p in sys.argv[1:3])
assert sim["device"] == "cuda", sim["device"]
rel = abs(sim["test_loss"] - cpu["test_loss"]) / abs(cpu["test_loss"])
print(f"test loss cpu {cpu['test_loss']:.6f} device {sim['test_loss']:.6f} (rel {rel:.2e}); "
      f"accuracy cpu {cpu['test_accuracy']:.4f} device {sim['test_accuracy']:.4f}")
assert rel < 1e-4 and abs(sim["test_accuracy"] - cpu["test_accuracy"]) <= 0.005
assert cpu["test_accuracy"] > 0.5, "the model did not learn: the comparison would say little"
PY
  grep -q "reduced on the device (simulated), overlap on" sim.log ||
    { cat sim.log; fail "the gradients were not reduced through the device all-reduce seam"; }
  # The same run with its gradients staged through host memory, and with the device all-reduce
  # started only at the end of backprop: the same reductions, so the same test loss, exactly.
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 host.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --dist.device_allreduce=host --output host || { cat host.log; fail "staged run"; }
  ! grep -q "reduced on the device" host.log || { cat host.log; fail "host did not stage"; }
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 late.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --dist.device_allreduce=nccl --dist.overlap=false --output late || { cat late.log; fail "late"; }
  # Batches copied one step ahead (train.device_prefetch, the default) or when their step
  # starts: the same test loss, exactly.
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 sync.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --train.device_prefetch=false --output sync || { cat sync.log; fail "unstaged run"; }
  $py - sim/summary.json host/summary.json late/summary.json sync/summary.json <<'PY' ||
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:5]]
a, b, c, d = (r["test_loss"] for r in runs)
print(f"test loss: device all-reduce {a!r}, staged {b!r}, device at the end {c!r}, "
      f"copied at step start {d!r}")
assert a == b == c == d
staged, unstaged = runs[0]["device_input"], runs[3]["device_input"]
print(f"device input: {staged}; without prefetch {unstaged}")
assert staged["batches"] == unstaged["batches"] > 0
assert staged["overlapped"] > staged["batches"] // 2, "most batches should be staged ahead"
assert unstaged["overlapped"] == 0
PY
    fail "device all-reduce or device input differs"
  # A run stopped mid-epoch (train.max_steps) and resumed ends as the uninterrupted run does,
  # exactly: the batch staged ahead was peeked, not taken, so the checkpoint still holds it.
  # (Without batch norm: its moving statistics are averaged over the ranks at a checkpoint,
  # ReplicaStrategy::SyncReplicas, which an uninterrupted run does not do at that step.)
  plain=(--eval.files="$shards" --train.epochs=3 --train.warmup_steps=0)
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 full.log "${tiny[@]}" "${plain[@]}" --train.device=cuda \
    --output full || { cat full.log; fail "the uninterrupted run"; }
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 cut.log "${tiny[@]}" "${plain[@]}" --train.device=cuda \
    --train.max_steps=21 --output cut || { cat cut.log; fail "the run stopped at step 21"; }
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 cut2.log "${tiny[@]}" "${plain[@]}" --train.device=cuda \
    --output cut --resume || { cat cut2.log; fail "the resumed run"; }
  grep -q "resuming from .* at step 21" cut2.log || { cat cut2.log; fail "did not resume at 21"; }
  $py - full/summary.json cut/summary.json <<'PY' || fail "the resumed run differs"
import json, sys
a, b = (json.load(open(p))["test_loss"] for p in sys.argv[1:3])
print(f"test loss: uninterrupted {a!r}, stopped at step 21 and resumed {b!r}")
assert a == b
PY
  # nccl for a model on the CPU is a config error naming the key.
  rc=0
  run_train 2 nccl.log "${tiny[@]}" --dist.device_allreduce=nccl --output nccl || rc=$?
  [ "$rc" -eq 2 ] || { cat nccl.log; fail "nccl on the CPU: exit $rc, wanted 2"; }
  grep -q "error: invalid argument: dist.device_allreduce = nccl reduces gradients on GPUs.*\[key=dist.device_allreduce\]" nccl.log ||
    { cat nccl.log; fail "no error naming dist.device_allreduce"; }
  # Prediction on the simulated device (shardflow-predict --train.device=cuda): the CPU's
  # classes for every record, probabilities within float rounding.
  sim_predict() {  # sim_predict LOG ARGS...: the uninterrupted run's checkpoint on 2 ranks
    local log=$1
    shift
    SHARDFLOW_SIMULATE_CUDA=1 timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-predict" \
      --config "$src/configs/fmnist_mlp.ini" --model.spec='flatten, dense:16, relu, dense:10' \
      --checkpoint full/checkpoints --input "$shards" "$@" >"$log" 2>&1
  }
  sim_predict pc.log --output pc.csv || { cat pc.log; fail "predict on the CPU"; }
  sim_predict pd.log --output pd.csv --train.device=cuda || { cat pd.log; fail "predict on device"; }
  grep -q "device: cuda (train.device = cuda: rank 0 on .* takes the simulated device" pd.log ||
    { cat pd.log; fail "predict: no device line"; }
  $py "$here/same_predictions.py" pc.csv pd.csv ||
    fail "predictions on the device differ from the CPU's"
  SHARDFLOW_SIMULATE_CUDA=1 run_train 2 resume.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --train.epochs=4 --output sim --resume || { cat resume.log; fail "resume on the device"; }
  grep -q "resuming from .* at step" resume.log || { cat resume.log; fail "did not resume"; }
  # One rank: no gradient reducer at all (the gradients stay on the device); the same run.
  run_train 1 cpu1.log "${tiny[@]}" "${bn[@]}" --output cpu1 || { cat cpu1.log; fail "cpu run"; }
  SHARDFLOW_SIMULATE_CUDA=1 run_train 1 sim1.log "${tiny[@]}" "${bn[@]}" --train.device=cuda \
    --output sim1 || { cat sim1.log; fail "one rank on the simulated device failed"; }
  $py - cpu1/summary.json sim1/summary.json <<'PY' || fail "one rank on the device does not track the CPU"
import json, sys
cpu, sim = (json.load(open(p)) for p in sys.argv[1:3])
assert sim["device"] == "cuda", sim["device"]
assert abs(sim["test_loss"] - cpu["test_loss"]) / abs(cpu["test_loss"]) < 1e-4
PY
  ;;
*) fail "unknown mode" ;;
esac
echo "$script $mode: ok"
