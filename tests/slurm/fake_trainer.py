#!/usr/bin/python3
"""A stand-in for shardflow-train in the scaling-study tests (not a trainer).

Accepts shardflow-train's command line (--config FILE --output DIR, --section.key=value
overrides, of which train.batch_size, train.batch_semantics, train.epochs, train.max_steps,
dist.pipeline_stages, dist.tensor_parallel, dist.micro_batches and dist.schedule are used),
runs once per rank under mpirun or srun (rank and size from the launcher's environment), sleeps
briefly, and on rank 0 writes DIR/summary.json with the fields of core/run_report.hpp
SummaryToJson. samples/s grows with the rank count with a communication cost per doubling, so
speed-up and efficiency are plausible and checkable; a pipeline loses its ideal bubble:
  samples_per_s = 1000 * ranks * 0.9 ** log2(ranks) * (1 - (S-1)/(M+S-1))
The grid is the trainer's: D = ranks / (S*T) replicas (S*T not dividing the ranks: exit 2),
the batch counts replicas, rank = (stage * D + replica) * T + way (each rank prints its place
and host: $SLURMD_NODENAME under Slurm, else the host name).
A model-parallel run (S*T > 1) writes "grid" and "strategy_figures" (bubble_fraction = ideal +
0.05 with S > 1, else 0); every run writes peak_rss_mib, [100 + 300/(S*T) + rank] per rank.
Like shardflow-train (apps/train/run_checks.cpp CheckFreshOutput) it refuses, exit 2, an
--output that already holds a run's metrics.jsonl (rank 0 checks, then writes it).
Test hooks (environment): FAKE_TRAINER_FAIL_RANKS=4 fails (exit 1) when run with 4 ranks;
FAKE_TRAINER_NO_SUMMARY=4 exits 0 without a summary with 4 ranks; FAKE_TRAINER_NO_RSS=1 leaves
out peak_rss_mib; FAKE_TRAINER_GRID_TEXT replaces the "grid" text; FAKE_TRAINER_FACTORS=1.4,1,0.9
with FAKE_TRAINER_COUNT_DIR=DIR scales samples/s by the k-th factor on the k-th run with the same
rank count (counted in DIR; cycling), so repeats of a point report different figures.
"""
import json
import math
import os
import sys
import time


def env_int(*names, default):
    for n in names:
        if os.environ.get(n):
            return int(os.environ[n])
    return default


def plural(n, one):
    return f"{n} {one}" + ("" if n == 1 else "s")


def run_factor(size):
    """FAKE_TRAINER_FACTORS[k] on the k-th run with `size` ranks (1 without the hook)."""
    factors = [float(f) for f in os.environ.get("FAKE_TRAINER_FACTORS", "").split(",") if f]
    if not factors:
        return 1.0
    counter = os.path.join(os.environ["FAKE_TRAINER_COUNT_DIR"], f"runs-{size}")
    with open(counter, "a+") as f:
        f.seek(0)
        k = len(f.readlines())
        f.write("run\n")
    return factors[k % len(factors)]


def main(argv):
    config = output = None
    values = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--config", "--output"):
            if i + 1 >= len(argv):
                print(f"fake_trainer: error: {a} needs a value", file=sys.stderr)
                return 2
            if a == "--config":
                config = argv[i + 1]
            else:
                output = argv[i + 1]
            i += 2
            continue
        if a.startswith("--") and "=" in a:
            key, _, value = a[2:].partition("=")
            values[key] = value
        else:
            print(f"fake_trainer: error: unknown argument '{a}'", file=sys.stderr)
            return 2
        i += 1
    if not config or not output:
        print("fake_trainer: error: --config and --output are required", file=sys.stderr)
        return 2
    rank = env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", default=0)
    size = env_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", default=1)
    # Slurm's node name first: the test Slurm's nodes may all be this one machine.
    host = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    print(f"fake_trainer: rank {rank}/{size} on {host} config {config} "
          f"threads {os.environ.get('SHARDFLOW_THREADS', '-')}\n", end="", flush=True)
    if str(size) == os.environ.get("FAKE_TRAINER_FAIL_RANKS"):
        print(f"fake_trainer: error: rank {rank}: simulated failure with {size} ranks",
              file=sys.stderr)
        return 1
    stages = int(values.get("dist.pipeline_stages", 1))
    ways = int(values.get("dist.tensor_parallel", 1))
    if stages < 1 or ways < 1 or size % (stages * ways):
        print(f"fake_trainer: error: {size} ranks do not factor into data replicas x "
              f"pipeline_stages {stages} x tensor_parallel {ways}", file=sys.stderr)
        return 2
    replicas = size // (stages * ways)
    print(f"fake_trainer: rank {rank} on {host} is stage {rank // ways // replicas} replica "
          f"{rank // ways % replicas} way {rank % ways}\n", end="", flush=True)
    micro = int(values.get("dist.micro_batches", 0)) or (2 * stages if stages > 1 else 1)
    bubble = (stages - 1) / (micro + stages - 1)
    batch = int(values.get("train.batch_size", 32))
    semantics = values.get("train.batch_semantics", "per_rank")
    per_rank = batch if semantics == "per_rank" else batch // replicas
    global_batch = per_rank * replicas
    steps = int(values.get("train.max_steps", 50))
    metrics = os.path.join(output, "metrics.jsonl")
    # Rank 0 alone checks (the real trainer's ranks agree through a collective; these share
    # nothing): a rank started late under load saw rank 0's fresh metrics.jsonl and refused.
    if rank == 0 and os.path.exists(metrics):
        print(f"fake_trainer: error: rank {rank}: the output already holds a run (metrics.jsonl); "
              "a fresh run would mix with it", file=sys.stderr)
        return 2
    time.sleep(0.2)
    if rank != 0:
        return 0
    os.makedirs(output, exist_ok=True)
    with open(metrics, "w") as f:
        f.write('{"step": 1}\n')
    if str(size) == os.environ.get("FAKE_TRAINER_NO_SUMMARY"):
        return 0
    rate = 1000.0 * size * 0.9 ** math.log2(size) * (1.0 - bubble) * run_factor(size)
    samples = steps * global_batch
    wall = samples / rate
    comm = 0.05 * math.log2(size) if size > 1 else 0.0
    summary = {
        "ranks": size, "per_rank_batch": per_rank, "global_batch": global_batch,
        "epochs": int(values.get("train.epochs", 1)), "steps": steps, "samples": samples,
        "samples_per_s": rate, "test_accuracy": 0.85, "wall_s": wall,
        "input_wait_fraction": 0.05, "compute_fraction": 0.95 - comm, "comm_fraction": comm,
        "verdict": "compute-bound" if comm < 0.15 else "communication-bound",
        "advice": "fake trainer: no advice",
    }
    if not os.environ.get("FAKE_TRAINER_NO_RSS"):
        summary["peak_rss_mib"] = [100.0 + 300.0 / (stages * ways) + r for r in range(size)]
    if stages * ways > 1:
        summary["grid"] = os.environ.get("FAKE_TRAINER_GRID_TEXT") or (
            f"{plural(replicas, 'replica')} x {plural(stages, 'stage')} x "
            f"{plural(ways, 'tensor way')}, {values.get('dist.schedule', '1f1b')}, "
            f"{micro} micro-batches")
        summary["strategy_figures"] = {
            "bubble_fraction": bubble + 0.05 if stages > 1 else 0.0,
            "ideal_bubble_fraction": bubble, "p2p_wait_s": 0.01, "collective_s": 0.02}
    os.makedirs(output, exist_ok=True)
    with open(os.path.join(output, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
