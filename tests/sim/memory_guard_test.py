#!/usr/bin/python3
"""slurm/simulate_study.py refuses, before starting SimGrid, a simulation whose real per-rank
buffers (SMPI's MPI_Allreduce buffers, recursive doubling's scratch) would not fit in memory:
`allreduce` exits 2 with one line naming the rank count and the need; `step` keeps the
alpha-beta bound for that count and says why in the row; a size range that never ends is
refused too. Needs no SimGrid (nothing is simulated).

    tests/sim/memory_guard_test.py"""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STUDY = os.path.join(ROOT, "slurm", "simulate_study.py")


def run(*args):
    # 16 GB available whatever this machine has, so the verdicts do not depend on it.
    env = dict(os.environ, SHARDFLOW_SIM_MEM_AVAILABLE=str(16 * 10**9))
    return subprocess.run([sys.executable, STUDY, *args], capture_output=True, text=True,
                          timeout=60, env=env)


def main():
    failed = False
    # MPI's buffers, 2 x 1024 x 64 MiB, and recursive doubling's scratch, 1024 x 64 MiB, are
    # real per rank (137 and 69 GB); the ring's two 64 KiB slots are not much.
    for algorithm, refused in (("mpi", True), ("rd", True), ("ring", False)):
        r = run("allreduce", "--platform", "ib_fattree", "--ranks", "1024", "--algorithms",
                algorithm, "--min-bytes", "64M", "--max-bytes", "64M", "--driver", "/nonexistent")
        lines = r.stderr.strip().splitlines()
        if refused:
            ok = (r.returncode == 2 and len(lines) == 1 and "1024 simulated ranks" in lines[0]
                  and "needs about" in lines[0] and "--max-bytes" in lines[0])
        else:  # passes the guard, then fails for want of the driver
            ok = r.returncode == 2 and "no simulated build" in r.stderr
        failed = failed or not ok
        print(f"{'ok' if ok else 'FAIL'}: allreduce by {algorithm}: exit {r.returncode}, "
              f"{r.stderr.strip()!r}")
    r = run("allreduce", "--platform", "ib_fattree", "--ranks", "4", "--step-factor", "1",
            "--driver", "/nonexistent")
    ok = r.returncode == 2 and "bad size range" in r.stderr
    failed = failed or not ok
    print(f"{'ok' if ok else 'FAIL'}: step factor 1 refused: exit {r.returncode}, "
          f"{r.stderr.strip()!r}")
    summary = os.path.join(ROOT, "bench", "results", "sim", "cnn.summary.json")
    r = run("step", "--platform", "ib_fattree", "--ranks", "4096", "--model", "cnn",
            "--summary", summary, "--driver", "/nonexistent")
    row = [line for line in r.stdout.splitlines() if line.startswith("| 4096 |")]
    ok = r.returncode == 0 and len(row) == 1 and "not simulated: needs about" in row[0]
    failed = failed or not ok
    print(f"{'ok' if ok else 'FAIL'}: step row kept the bound: exit {r.returncode}, {row}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
