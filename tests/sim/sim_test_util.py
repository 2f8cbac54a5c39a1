"""What the simulation tests share: the skip when SimGrid is absent, and a ring all-reduce
simulated at a list of sizes (slurm/simulate_study.py's driver)."""

import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "slurm"))
import simulate_study as sim  # noqa: E402,F401  (the tests use it as sim_test_util.sim)


def smpi_missing(driver):
    """True, after printing the skip line, when smpirun or the simulated build is absent."""
    if shutil.which("smpirun") is None or not os.access(driver, os.X_OK):
        print(f"SKIP: SimGrid SMPI (smpirun) or the simulated build {driver} is absent "
              "(apt-get install libsimgrid-dev, then reconfigure)")
        return True
    return False


def ring_rows(platform, ranks, sizes, driver, extra=()):
    """The driver's rows of a ring all-reduce of each size on `ranks` simulated ranks; None,
    after printing a FAIL line, when the simulation fails, times out (100 s) or misses a size."""
    try:
        rows = sim.run_driver(platform, ranks,
                              ["allreduce", "--algorithms", "ring", *extra, "--iters", "2",
                               "--sizes", ",".join(str(s) for s in sizes)], driver, timeout=100)
    except (sim.SimError, sim.subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}")
        return None
    if len(rows) != len(sizes):
        print(f"FAIL: expected {len(sizes)} result rows, got {rows}")
        return None
    return rows
