#!/usr/bin/python3
"""slurm/simulate_study.py refuses, before starting SimGrid, a simulation whose MPI_Allreduce
buffers (real per simulated rank) would not fit in memory: `allreduce` exits 2 with one line
naming the size, the rank count and the need; `step` keeps the alpha-beta bound for that count
and says why in the row. Needs no SimGrid (nothing is simulated).

    tests/sim/memory_guard_test.py"""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STUDY = os.path.join(ROOT, "slurm", "simulate_study.py")


def run(*args):
    return subprocess.run([sys.executable, STUDY, *args], capture_output=True, text=True,
                          timeout=60)


def main():
    failed = False
    # 2 x 4096 x 1 GiB = 8.8 TB of MPI buffers: no machine here has that.
    r = run("allreduce", "--platform", "ib_fattree", "--ranks", "4096", "--algorithms", "mpi",
            "--min-bytes", "1G", "--max-bytes", "1G", "--driver", "/nonexistent")
    lines = r.stderr.strip().splitlines()
    ok = (r.returncode == 2 and len(lines) == 1 and "4096 simulated ranks" in lines[0]
          and "needs about" in lines[0] and "--max-bytes" in lines[0])
    failed = failed or not ok
    print(f"{'ok' if ok else 'FAIL'}: allreduce refused: exit {r.returncode}, {r.stderr.strip()!r}")
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
