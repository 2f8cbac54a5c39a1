#!/usr/bin/env bash
# Per-rank launch wrapper used inside an allocation (srun or mpirun starts one copy per rank):
#
#   srun slurm/launch.sh [--check] [--gpus-per-node G] -- build/bin/shardflow-train --config X
#   mpirun -np 4 slurm/launch.sh -- build/bin/shardflow-train --config X
#
# For its local rank L of N ranks on this node it
#   - picks GPU L of the node's visible GPUs (CUDA_VISIBLE_DEVICES from Slurm, or nvidia-smi, or
#     --gpus-per-node) and sets CUDA_VISIBLE_DEVICES to that one GPU;
#   - binds the rank to its own contiguous block of the CPUs this job may use (taskset), and sets
#     OMP_NUM_THREADS and SHARDFLOW_THREADS to the block size;
#   - asks the program to print one binding table (rank, host, local rank, GPU, cores) at start;
#     with --check, the program stops before any work if two ranks share a GPU or a core.
# It stops at once, with a message naming the numbers, when the ranks do not fit the resources
# (more ranks on a node than GPUs, or than cores with --check).
set -euo pipefail

check=0 gpus_per_node=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    --gpus-per-node) gpus_per_node="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "launch.sh: no program given (usage: launch.sh [--check] -- PROGRAM ARGS)" >&2; exit 2; }

host=$(hostname)
die() { echo "launch.sh [$host local rank $local_rank]: $*" >&2; exit 2; }

# Local rank and the number of ranks on this node, from whichever launcher started us.
# mpirun's variables first: inside an sbatch script every process inherits the batch step's
# SLURM_LOCALID=0, which is only right for ranks that srun started.
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${PMIX_LOCAL_RANK:-0}}}
if [ -n "${OMPI_COMM_WORLD_LOCAL_SIZE:-}" ]; then
  local_size=$OMPI_COMM_WORLD_LOCAL_SIZE
elif [ -n "${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-}}" ]; then
  # "2(x3),1": expand to one count per node and take this node's (SLURM_NODEID).
  spec=${SLURM_STEP_TASKS_PER_NODE:-$SLURM_TASKS_PER_NODE}
  counts=()
  IFS=',' read -ra parts <<<"$spec"
  for p in "${parts[@]}"; do
    if [[ $p =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
      for _ in $(seq "${BASH_REMATCH[2]}"); do counts+=("${BASH_REMATCH[1]}"); done
    else
      counts+=("$p")
    fi
  done
  local_size=${counts[${SLURM_NODEID:-0}]:-1}
else
  local_size=1
fi

# GPUs visible to the node's ranks.
gpus=()
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=',' read -ra gpus <<<"$CUDA_VISIBLE_DEVICES"
elif [ -n "$gpus_per_node" ]; then
  for ((g = 0; g < gpus_per_node; g++)); do gpus+=("$g"); done
elif command -v nvidia-smi >/dev/null 2>&1; then
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  for ((g = 0; g < n; g++)); do gpus+=("$g"); done
fi
if [ ${#gpus[@]} -gt 0 ]; then
  [ "$local_size" -le ${#gpus[@]} ] ||
    die "$local_size ranks on this node but only ${#gpus[@]} GPUs (${gpus[*]}): use --ntasks-per-node=${#gpus[@]} or --gpus-per-node=$local_size"
  export CUDA_VISIBLE_DEVICES=${gpus[$local_rank]}
fi

# CPUs this job may use on this node, split into one contiguous block per local rank.
allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
cpus=()
IFS=',' read -ra ranges <<<"$allowed"
for r in "${ranges[@]}"; do
  if [[ $r == *-* ]]; then for ((c = ${r%-*}; c <= ${r#*-}; c++)); do cpus+=("$c"); done
  else cpus+=("$r"); fi
done
block=$(( ${#cpus[@]} / local_size ))
if [ "${OMPI_MCA_orte_bound_at_launch:-0}" = 1 ]; then
  # mpirun already bound this rank (its default --bind-to core): keep that binding. When it
  # oversubscribes it binds every rank to every core: then the ranks share them fairly.
  list=$allowed
  total=$(nproc --all)
  fair=$(( total / local_size )); [ "$fair" -ge 1 ] || fair=1
  threads=$(( ${#cpus[@]} < fair ? ${#cpus[@]} : fair ))
elif [ "$block" -ge 1 ]; then
  mine=("${cpus[@]:$((local_rank * block)):$block}")
  list=$(IFS=,; echo "${mine[*]}")
  threads=$block
else
  [ "$check" -eq 0 ] ||
    die "$local_size ranks on this node but only ${#cpus[@]} CPUs allowed ($allowed): ranks would share cores"
  list=$allowed   # oversubscribed: every rank may use every core
  threads=1
fi
export OMP_NUM_THREADS=$threads SHARDFLOW_THREADS=$threads SHARDFLOW_BINDING_REPORT=1
[ "$check" -eq 1 ] && export SHARDFLOW_BINDING_CHECK=1
exec taskset -c "$list" "$@"
