#!/usr/bin/env bash
# Preemption under a real single-machine Slurm (tests/slurm/local_slurm.sh): cpu.sbatch (which
# asks for --requeue and --signal=B:USR1@120) trains a slowed run; `scancel --signal=USR1 --batch`
# mid-run, as the time-limit warning would; the template passes USR1 to the ranks, shardflow-train
# checkpoints and exits 75, the template requeues the job, and the requeued job resumes from the
# checkpoint and finishes: one "resuming from" line, a final report, and summary.json counting
# every step. (Slurm holds a requeued batch job for its credential lifetime, cred_expire: 120 s by
# default, 5 s in local_slurm.sh's configuration.)
# Usage: requeue_test.sh SOURCE_DIR WORK_DIR. Exit 77 (skip) without root or Slurm.
set -u
src=$1 work=$2
rm -rf "$work"; mkdir -p "$work"
slurm="$work/slurm"
"$src/tests/slurm/local_slurm.sh" start "$slurm" || exit $?
trap '"$src/tests/slurm/local_slurm.sh" stop "$slurm"' EXIT
. "$slurm/env.sh"
fail() { echo "requeue: FAILED: $*"; tail -40 "$work/job.out" 2>/dev/null; exit 1; }

mkdir -p "$work/data"
mpirun --allow-run-as-root -np 2 "$src/build/bin/shardflow-convert" --input.format=idx \
  --input.split=test --input.limit=1000 --output.path="$work/data/t" --output.shards=4 \
  --log.level=warn >/dev/null || fail "convert failed"
cat >"$work/tiny.ini" <<INI
[data]
files = $work/data/t-*-of-*.tfrecord
features = image_raw:bytes:uint8:28x28x1, label:int64:int64:scalar
[model]
spec = linear
[train]
epochs = 3
batch_size = 50
INI
# 1000 records / 2 ranks / 50 = 10 steps an epoch, 30 steps, rank 0 slowed 150 ms a step: ~5 s.
job=$(cd "$src" && sbatch --parsable --chdir="$src" --job-name=requeue --output="$work/job.out" \
  --export="ALL,SHARDFLOW_OUTPUT=$work/run,SHARDFLOW_TEST_FAULT=slow:0:150" \
  "$src/slurm/cpu.sbatch" "$work/tiny.ini" --no-progress) || fail "sbatch failed"
for _ in $(seq 100); do
  grep -q "^\[r0 I" "$work/job.out" 2>/dev/null && break
  sleep 0.2
done
sleep 1.5
scancel --signal=USR1 --batch "$job" || fail "scancel --signal failed"
for _ in $(seq 240); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.5
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "job $job still queued after 120 s: $(squeue -h -j "$job")"
grep -q "^stopped by SIGUSR1 after step [0-9]*: checkpoint written" "$work/job.out" ||
  fail "the first run did not stop with a checkpoint"
grep -q "^shardflow: job $job stopped with a checkpoint (exit 75); requeueing it" "$work/job.out" ||
  fail "the template did not requeue"
[ "$(grep -c "resuming from .*ckpt-" "$work/job.out")" -eq 1 ] || fail "the requeued run did not resume once"
grep -q "^test accuracy" "$work/job.out" && fail "evaluation ran although tiny.ini has none"
python3 - "$work/run/summary.json" <<'PY' || fail "summary.json"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["steps"] == 30, s["steps"]
PY
echo "requeue: ok (job $job stopped, requeued itself and finished)"
