#!/usr/bin/python3
"""The calibrated platform of this machine (sim/platforms/local_calibrated.xml) is simulated with
its own network model and size-dependent bandwidth factors (its <config>, which
slurm/simulate_study.py must not override on the command line): a 2-rank ring all-reduce of S
bytes sends, per phase, n messages of m bytes (S / 2 cut into 4 MiB segments), so it must take
2 n (0.5 us + m / (5 GB/s x f)), f the platform's factor for m bytes. Checked at sizes in three
factor bands (f below and above 1) within 3%; with the factors ignored (the plain CM02 model)
these sizes are 40-70% off.

    tests/sim/calibrated_platform_test.py BUILD/sim/smpi/shardflow-sim

Exit 77 (CTest SKIP) when SimGrid's smpirun or the simulated build is absent."""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_test_util import ring_rows, sim, smpi_missing  # noqa: E402

SIZES = [16384, 1 << 20, 64 << 20]
TOLERANCE = 0.03


def main(driver):
    if smpi_missing(driver):
        return 77
    platform = sim.load_platform("local_calibrated")
    if platform["config"].get("network/model") != "SMPI":
        print(f"FAIL: local_calibrated.xml's <config> was not read: {platform['config']}")
        return 1
    rows = ring_rows(platform, 2, SIZES, driver)
    if rows is None:
        return 1
    failed = False
    for r in rows:
        nbytes = int(r["bytes"])
        count, message = sim.ring_messages(nbytes, 2)
        factor = sim.bw_factor(platform, message)
        want = 2 * count * (sim.route_latency(platform, 0, 1) + message / (platform["bw"] * factor))
        got = float(r["seconds"])
        error = abs(got - want) / want
        ok = error <= TOLERANCE
        failed = failed or not ok
        print(f"{'ok' if ok else 'FAIL'}: 2-rank ring all-reduce of {nbytes} bytes: simulated "
              f"{got * 1e6:.2f} us, expected {want * 1e6:.2f} us with bandwidth factor {factor} "
              f"({error * 100:.1f}% off, bound {TOLERANCE * 100:.0f}%)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
