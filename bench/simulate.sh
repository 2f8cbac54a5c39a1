#!/usr/bin/env bash
# Simulated scaling figures of BENCHMARKS.md, "Simulated scaling (issue 26)" (docs/simulation.md).
# Needs the simulated build (SimGrid's libsimgrid-dev installed when build/ was configured):
#   cmake --build build --target shardflow_sim shardflow-sim-buckets shardflow-bench
#   bench/simulate.sh ib [RANKS [MAX]]  all-reduce per algorithm on the IB fat tree (default
#                                       16,64 up to 64M), sizes 1K..MAX x16, auto's pick vs
#                                       fastest. Memory: rd's scratch and SMPI's own MPI_Allreduce
#                                       buffers are real per rank (ranks x MAX bytes), so 256
#                                       ranks stop at 4M (docs/simulation.md, "Cost")
#   bench/simulate.sh ib-large RANKS    rd, mpi and auto at 1K and 16K (4096 ranks: under a
#                                       minute; the ring's p^2 messages cost about a minute
#                                       per size at 1024 ranks, so it is left out)
#   bench/simulate.sh steps [RANKS]     MLP, CNN and ResNet step replay (weak scaling), compute
#                                       and input times from bench/results/sim/*.summary.json
#   bench/simulate.sh validate          measures all-reduce here at 2, 4, 8 ranks with
#                                       shardflow-bench and compares local_calibrated.xml
# Each prints the date, load average and the command it ran, then a Markdown table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
study=$root/slurm/simulate_study.py
what=${1:?usage: bench/simulate.sh ib|ib-large|steps|validate [RANKS]}
echo "# $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
case $what in
  ib)
    ranks=${2:-16,64}
    max=${3:-64M}
    echo "# python3 slurm/simulate_study.py allreduce --platform ib_fattree --ranks $ranks --min-bytes 1K --max-bytes $max --step-factor 16"
    python3 "$study" allreduce --platform ib_fattree --ranks "$ranks" --min-bytes 1K \
      --max-bytes "$max" --step-factor 16 ;;
  ib-large)
    ranks=${2:?bench/simulate.sh ib-large RANKS}
    echo "# python3 slurm/simulate_study.py allreduce --platform ib_fattree --ranks $ranks --algorithms rd,mpi,auto --min-bytes 1K --max-bytes 16K --step-factor 16"
    python3 "$study" allreduce --platform ib_fattree --ranks "$ranks" --algorithms rd,mpi,auto \
      --min-bytes 1K --max-bytes 16K --step-factor 16 ;;
  steps)
    ranks=${2:-16,64,256,1024,4096}  # counts that would not fit in memory get the bound only
    for model in mlp cnn resnet; do
      echo "# python3 slurm/simulate_study.py step --platform ib_fattree --ranks $ranks --model $model --summary bench/results/sim/$model.summary.json"
      python3 "$study" step --platform ib_fattree --ranks "$ranks" --model $model \
        --summary "$root/bench/results/sim/$model.summary.json"
    done ;;
  validate)
    measured=$(mktemp)
    trap 'rm -f "$measured"' EXIT
    for np in 2 4 8; do
      # Ranks beyond the 2 cores yield when idle (as the MPI tests run).
      yield=0; [ "$np" -gt 2 ] && yield=1
      OMPI_MCA_mpi_yield_when_idle=$yield mpirun --allow-run-as-root --oversubscribe -np $np \
        "$root/build/bin/shardflow-bench" allreduce --min-bytes 1K --max-bytes 64M \
        --step-factor 4 --iters 10 --warmup 2 --repeats 5 --algorithms ring,rd,mpi --json |
        grep '^{' >> "$measured"
    done
    echo "# python3 slurm/simulate_study.py validate --platform local_calibrated --measured MEASURED"
    python3 "$study" validate --platform local_calibrated --measured "$measured" ;;
  *) echo "bench/simulate.sh: unknown '$what' (ib, ib-large, steps, validate)" >&2; exit 2 ;;
esac
