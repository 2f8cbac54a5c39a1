#!/usr/bin/python3
"""`auto` on 128 simulated ranks of the InfiniBand fat tree, where OpenMPI's own rule (SMPI's
`ompi` selector) turns small all-reduces into a reduce and a broadcast: auto must run what
comm/allreduce.cpp's rule and its mirror (slurm/simulate_study.py: auto_pick) both say, be
as fast as the fastest of recursive doubling and MPI there, and sum exactly (--check). With
every rank starting at the same simulated instant (the driver's aligned start), recursive
doubling's time is its alpha-beta time (docs/simulation.md). And with 8 ranks per node
(ib_fattree_8ppn), auto takes the hierarchical all-reduce for 16-64 KiB at 128 ranks and MPI at
256, the faster of the two each time.

    tests/sim/auto_choice_test.py BUILD/sim/smpi/shardflow-sim

Exit 77 (CTest SKIP) when SimGrid's smpirun or the simulated build is absent."""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_test_util import sim, smpi_missing  # noqa: E402

RANKS = 128
SIZES = [1024, 65536, 262144, 1 << 20]
ALPHA_BETA_TOLERANCE = 0.02
FASTEST_TOLERANCE = 0.01


def main(driver):
    if smpi_missing(driver):
        return 77
    platform = sim.load_platform("ib_fattree")
    try:
        rows = sim.run_driver(platform, RANKS,
                              ["allreduce", "--algorithms", "auto,rd,mpi", "--check", "--iters",
                               "1", "--sizes", ",".join(str(s) for s in SIZES)], driver,
                              timeout=100)
    except (sim.SimError, sim.subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}")
        return 1
    if len(rows) != 3 * len(SIZES):
        print(f"FAIL: expected {3 * len(SIZES)} rows, got {rows}")
        return 1
    t = {(r["algorithm"], int(r["bytes"])): r for r in rows}
    failed = False

    def report(ok, text):
        nonlocal failed
        failed = failed or not ok
        print(f"{'ok' if ok else 'FAIL'}: {text}")

    for nbytes in SIZES:
        auto = t[("auto", nbytes)]
        seconds = {a: float(t[(a, nbytes)]["seconds"]) for a in ("auto", "rd", "mpi")}
        fastest = min(seconds["rd"], seconds["mpi"])
        want = sim.auto_pick(RANKS, nbytes)
        report(auto["ran"] == want and auto["check"] == "exact",
               f"{nbytes} bytes: auto ran {auto['ran']} (rule: {want}), result {auto['check']}")
        report(seconds["auto"] <= fastest * (1 + FASTEST_TOLERANCE),
               f"{nbytes} bytes: auto {seconds['auto'] * 1e6:.1f} us, rd "
               f"{seconds['rd'] * 1e6:.1f}, mpi {seconds['mpi'] * 1e6:.1f}")
    # The reason for the rule: MPI's reduce-and-broadcast takes twice the latencies.
    report(float(t[("mpi", 1024)]["seconds"]) > 1.5 * float(t[("rd", 1024)]["seconds"]),
           "1 KiB: MPI's reduce and broadcast over 1.5x recursive doubling")
    # Several ranks per node (8 per node): the leaders' ring for 8-64 KiB below 256 ranks,
    # MPI's Rabenseifner from 256 (32 node leaders and more).
    per_node = sim.load_platform("ib_fattree_8ppn")
    for ranks, want in ((128, "hierarchical"), (256, "mpi")):
        try:
            rows = sim.run_driver(per_node, ranks,
                                  ["allreduce", "--algorithms", "auto,hierarchical,mpi", "--iters",
                                   "1", "--sizes", "16384,65536"], driver, timeout=100)
        except (sim.SimError, sim.subprocess.TimeoutExpired) as e:
            print(f"FAIL: {e}")
            return 1
        u = {(r["algorithm"], int(r["bytes"])): r for r in rows}
        for nbytes in (16384, 65536):
            secs = {a: float(u[(a, nbytes)]["seconds"]) for a in ("auto", "hierarchical", "mpi")}
            report(u[("auto", nbytes)]["ran"] == want and
                   secs["auto"] <= min(secs["hierarchical"], secs["mpi"]) * (1 + FASTEST_TOLERANCE),
                   f"{ranks} ranks, 8 per node, {nbytes} bytes: auto ran "
                   f"{u[('auto', nbytes)]['ran']} (want {want}), {secs['auto'] * 1e6:.1f} us; "
                   f"hierarchical {secs['hierarchical'] * 1e6:.1f}, mpi {secs['mpi'] * 1e6:.1f}")
    model = sim.rd_alpha_beta(platform, RANKS, 1024)
    simulated = float(t[("rd", 1024)]["seconds"])
    error = abs(simulated - model) / model
    report(error <= ALPHA_BETA_TOLERANCE,
           f"recursive doubling of 1 KiB: {simulated * 1e6:.2f} us, alpha-beta {model * 1e6:.2f} "
           f"us ({error * 100:.1f}% off, bound {ALPHA_BETA_TOLERANCE * 100:.0f}%)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
