# Sourced by the sbatch templates. Starts shardflow-train on every rank of the allocation
# through slurm/launch.sh, with srun (default) or mpirun inside the allocation:
#   SHARDFLOW_LAUNCHER=srun|mpirun   (default srun --mpi=pmix)
#   SHARDFLOW_HOME=/path/to/checkout  (default: the checkout this script is in)
#   SHARDFLOW_OUTPUT=DIR              (default runs/<job id>)
#   SHARDFLOW_TRAIN=PROGRAM           (default build/bin/shardflow-train; gpu_node.sbatch picks
#                                      shardflow-train-cuda, the build with the CUDA backend)
# Arguments: CONFIG [--section.key=value ...]
set -euo pipefail
home=${SHARDFLOW_HOME:-${SLURM_SUBMIT_DIR:-$(pwd)}}
config=${1:?"usage: sbatch $0 CONFIG [--section.key=value ...]"}
shift
output=${SHARDFLOW_OUTPUT:-$home/runs/${SLURM_JOB_ID:-local}}
train=${SHARDFLOW_TRAIN:-$home/build/bin/shardflow-train}
launch=$home/slurm/launch.sh
[ -x "$train" ] || { echo "error: $train not found: build shardflow first (./test.sh or cmake --build build)" >&2; exit 2; }
[ -f "$config" ] || { echo "error: config file '$config' not found" >&2; exit 2; }
mkdir -p "$output"
echo "shardflow: job ${SLURM_JOB_ID:-?} on ${SLURM_JOB_NUM_NODES:-1} node(s) [${SLURM_JOB_NODELIST:-$(hostname)}], ${SLURM_NTASKS:-?} ranks, config $config, output $output"
launch_args=(--check)
[ -n "${SHARDFLOW_GPUS_PER_NODE:-}" ] && launch_args+=(--gpus-per-node "$SHARDFLOW_GPUS_PER_NODE")
case "${SHARDFLOW_LAUNCHER:-srun}" in
  srun) step=(srun --mpi=pmix --kill-on-bad-exit=1) ;;
  mpirun) step=(mpirun --bind-to none --allow-run-as-root) ;;
  *) echo "error: SHARDFLOW_LAUNCHER must be srun or mpirun, not '$SHARDFLOW_LAUNCHER'" >&2; exit 2 ;;
esac

# Preemption and time limits (the templates ask for --requeue and --signal=B:USR1@120): the batch
# shell gets USR1 before the limit, or TERM on scancel/preemption, and passes USR1 to the step
# (srun and mpirun forward it to every rank). shardflow-train then finishes its step, writes a
# checkpoint and exits 75; this script requeues the job (SHARDFLOW_REQUEUE=0: it does not), and
# the job, started again under the same id and output folder, resumes (--resume=auto starts fresh
# when there is no checkpoint).
forward() { [ -n "${pid:-}" ] && kill -USR1 "$pid" 2>/dev/null || true; }
trap forward USR1 TERM
resume=(--resume=auto)
for arg in "$@"; do [[ $arg == --resume* ]] && resume=(); done  # the caller's own choice
"${step[@]}" "$launch" "${launch_args[@]}" -- "$train" --config "$config" --output "$output" \
  "${resume[@]}" "$@" &
pid=$!
rc=0
wait "$pid" || rc=$?
while kill -0 "$pid" 2>/dev/null; do  # a trapped signal ended the wait, not the step
  rc=0
  wait "$pid" || rc=$?
done
if [ "$rc" -eq 75 ] && [ -n "${SLURM_JOB_ID:-}" ] && [ "${SHARDFLOW_REQUEUE:-1}" = 1 ]; then
  echo "shardflow: job $SLURM_JOB_ID stopped with a checkpoint (exit 75); requeueing it"
  scontrol requeue "$SLURM_JOB_ID" && exit 0
  echo "shardflow: scontrol requeue failed; resubmit with the same SHARDFLOW_OUTPUT to continue" >&2
fi
exit "$rc"
