#!/usr/bin/python3
"""A 64-rank ring all-reduce simulated by SimGrid SMPI on the InfiniBand fat tree: every element
of every rank's result is the exact sum (the driver's --check), and the simulated time is within
10% of the alpha-beta formula for the platform's parameters (slurm/simulate_study.py:
ring_alpha_beta; docs/simulation.md), at a latency-bound and a bandwidth-bound size.

    tests/sim/ring_alpha_beta_test.py BUILD/sim/smpi/shardflow-sim

Exit 77 (CTest SKIP) when SimGrid's smpirun or the simulated build is absent."""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_test_util import ring_rows, sim, smpi_missing  # noqa: E402

RANKS = 64
SIZES = [4096, 4 << 20]
TOLERANCE = 0.10


def main(driver):
    if smpi_missing(driver):
        return 77
    platform = sim.load_platform("ib_fattree")
    # The driver fails (non-zero exit) on any wrong element; 100 s bounds a hang.
    rows = ring_rows(platform, RANKS, SIZES, driver, extra=["--check"])
    if rows is None:
        return 1
    failed = False
    for r in rows:
        nbytes = int(r["bytes"])
        simulated = float(r["seconds"])
        model = sim.ring_alpha_beta(platform, RANKS, nbytes)
        error = abs(simulated - model) / model
        ok = r["check"] == "exact" and int(r["ranks"]) == RANKS and error <= TOLERANCE
        failed = failed or not ok
        print(f"{'ok' if ok else 'FAIL'}: ring all-reduce of {nbytes} bytes on {RANKS} simulated "
              f"ranks: {simulated * 1e6:.2f} us, alpha-beta {model * 1e6:.2f} us "
              f"({error * 100:.1f}% off, bound {TOLERANCE * 100:.0f}%), result {r['check']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
