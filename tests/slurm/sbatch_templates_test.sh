#!/usr/bin/env bash
# The sbatch templates under a real single-machine Slurm (tests/slurm/local_slurm.sh):
#  - cpu.sbatch with srun --mpi=pmix and with mpirun trains, prints the binding table with two
#    distinct cores, and exits 0;
#  - gpu_node.sbatch with more ranks than GPUs stops before training with a clear message;
#  - an invalid config stops before training with one error line naming file, line and key.
# Usage: sbatch_templates_test.sh SOURCE_DIR WORK_DIR. Exit 77 (skip) without root or Slurm.
# The templates run SOURCE_DIR/build/bin/shardflow-train (the checkout's build, as on a cluster).
set -u
src=$1 work=$2
rm -rf "$work"; mkdir -p "$work"
slurm="$work/slurm"
"$src/tests/slurm/local_slurm.sh" start "$slurm" || exit $?
trap '"$src/tests/slurm/local_slurm.sh" stop "$slurm"' EXIT
. "$slurm/env.sh"
fail=0
say() { echo "sbatch_templates: $*"; fail=1; }

# Small data: the first 1000 test images, 4 shards.
mkdir -p "$work/data"
mpirun --allow-run-as-root -np 2 "$src/build/bin/shardflow-convert" --input.format=idx \
  --input.split=test --input.limit=1000 --output.path="$work/data/t" --output.shards=4 \
  --log.level=warn >/dev/null || { echo "convert failed"; exit 1; }
cat >"$work/tiny.ini" <<INI
[data]
files = $work/data/t-*-of-*.tfrecord
features = image_raw:bytes:uint8:28x28x1, label:int64:int64:scalar
[eval]
files = $work/data/t-*-of-*.tfrecord
features = image_raw:bytes:uint8:28x28x1, label:int64:int64:scalar
[model]
spec = linear
[train]
epochs = 1
batch_size = 50
INI
printf '[train]\nbatch_sise = 3\n' >"$work/bad.ini"

submit() {  # submit NAME ENV... -- TEMPLATE ARGS...: prints the job id
  local name=$1; shift
  local envs=ALL
  while [ "$1" != "--" ]; do envs="$envs,$1"; shift; done; shift
  (cd "$src" && sbatch --parsable --chdir="$src" --job-name="$name" --output="$work/$name.out" \
    --export="$envs,SHARDFLOW_OUTPUT=$work/run-$name" "$@")
}
j_srun=$(submit srun -- "$src/slurm/cpu.sbatch" "$work/tiny.ini" --no-progress)
j_mpirun=$(submit mpirun SHARDFLOW_LAUNCHER=mpirun -- "$src/slurm/cpu.sbatch" "$work/tiny.ini" --no-progress)
# Two ranks on a node said to have one GPU (this machine has none, so the count is given).
j_gpus=$(submit gpus SHARDFLOW_GPUS_PER_NODE=1 -- "$src/slurm/cpu.sbatch" "$work/tiny.ini")
j_bad=$(submit bad -- "$src/slurm/cpu.sbatch" "$work/bad.ini")
for _ in $(seq 120); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
[ -z "$(squeue -h 2>/dev/null)" ] || say "jobs still queued after 60 s: $(squeue -h)"

for name in srun mpirun; do
  out="$work/$name.out"
  grep -qE '^0 +[^ ]+ +0 +- +[0-9]' "$out" && grep -qE '^1 +[^ ]+ +1 +- +[0-9]' "$out" ||
    say "$name: no binding table with ranks 0 and 1 in $out"
  cores=$(grep -E '^[01] +[^ ]+ +[01] +- ' "$out" | awk '{print $5}' | sort -u | wc -l)
  [ "$cores" -eq 2 ] || say "$name: ranks do not have distinct cores"
  grep -q '^test accuracy' "$out" || say "$name: no report in $out"
  [ -f "$work/run-$name/summary.json" ] || say "$name: no summary.json"
done
grep -q 'ranks on this node but only 1 GPUs' "$work/gpus.out" || say "gpus: no clear resource message in gpus.out"
grep -q '^test accuracy' "$work/gpus.out" && say "gpus: training started despite the mismatch"
grep -q '^test accuracy' "$work/bad.out" && say "bad: training started despite the bad config"
[ "$(grep -c 'error: invalid argument: .*bad.ini:2: unknown config key .train.batch_sise.' "$work/bad.out")" -eq 1 ] ||
  say "bad: expected exactly one error line naming bad.ini:2 and the key"
if [ $fail -ne 0 ]; then
  for f in "$work"/*.out; do echo "--- $f"; tail -15 "$f"; done
  exit 1
fi
echo "sbatch_templates: ok (jobs $j_srun $j_mpirun $j_gpus $j_bad)"
