# Sourced by the sbatch templates. Starts shardflow-train on every rank of the allocation
# through slurm/launch.sh, with srun (default) or mpirun inside the allocation:
#   SHARDFLOW_LAUNCHER=srun|mpirun   (default srun --mpi=pmix)
#   SHARDFLOW_HOME=/path/to/checkout  (default: the checkout this script is in)
#   SHARDFLOW_OUTPUT=DIR              (default runs/<job id>)
# Arguments: CONFIG [--section.key=value ...]
set -euo pipefail
home=${SHARDFLOW_HOME:-${SLURM_SUBMIT_DIR:-$(pwd)}}
config=${1:?"usage: sbatch $0 CONFIG [--section.key=value ...]"}
shift
output=${SHARDFLOW_OUTPUT:-$home/runs/${SLURM_JOB_ID:-local}}
train=$home/build/bin/shardflow-train
launch=$home/slurm/launch.sh
[ -x "$train" ] || { echo "error: $train not found: build shardflow first (./test.sh or cmake --build build)" >&2; exit 2; }
[ -f "$config" ] || { echo "error: config file '$config' not found" >&2; exit 2; }
mkdir -p "$output"
echo "shardflow: job ${SLURM_JOB_ID:-?} on ${SLURM_JOB_NUM_NODES:-1} node(s) [${SLURM_JOB_NODELIST:-$(hostname)}], ${SLURM_NTASKS:-?} ranks, config $config, output $output"
launch_args=(--check)
[ -n "${SHARDFLOW_GPUS_PER_NODE:-}" ] && launch_args+=(--gpus-per-node "$SHARDFLOW_GPUS_PER_NODE")
case "${SHARDFLOW_LAUNCHER:-srun}" in
  srun) exec srun --mpi=pmix --kill-on-bad-exit=1 "$launch" "${launch_args[@]}" -- "$train" --config "$config" --output "$output" "$@" ;;
  mpirun) exec mpirun --bind-to none --allow-run-as-root "$launch" "${launch_args[@]}" -- "$train" --config "$config" --output "$output" "$@" ;;
  *) echo "error: SHARDFLOW_LAUNCHER must be srun or mpirun, not '$SHARDFLOW_LAUNCHER'" >&2; exit 2 ;;
esac
