#!/usr/bin/python3
"""Simulated scaling studies: shardflow's all-reduce and training step on SimGrid SMPI.

    slurm/simulate_study.py allreduce --platform ib_fattree --ranks 16,64,256 [options]
    slurm/simulate_study.py step --platform ib_fattree --ranks 64,256 --model cnn \
        --summary RUN/summary.json [options]

The driver build/sim/smpi/shardflow-sim (sim/CMakeLists.txt) runs under smpirun on a platform
of sim/platforms/ (sim/platforms/README.md); the figures are simulated time. `allreduce`
prints, per rank count and size, every algorithm's time and bus bandwidth, the alpha-beta
prediction (docs/simulation.md), what `auto` picks and which algorithm was fastest. `step`
replays the data-parallel step of a model preset: its gradient buckets (shardflow-sim-buckets,
the reducer's own layout) all-reduced while backward runs, with the input and compute time per
step of a real run's summary.json injected as simulated computation. slurm/scaling_study.py
--simulate uses simulate_points() to print a study table from it. Standard library only.
"""

import argparse
import csv
import io
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLATFORM_DIR = os.path.join(ROOT, "sim", "platforms")
DEFAULT_DRIVER = os.path.join(ROOT, "build", "sim", "smpi", "shardflow-sim")
DEFAULT_BUCKETS = os.path.join(ROOT, "build", "bin", "shardflow-sim-buckets")
# Every simulation runs with these (docs/simulation.md, "Network model"): the plain CM02
# model (latency + size / bandwidth per link, max-min sharing) without SMPI's piecewise
# factors fitted on another cluster or TCP's reverse (ACK) traffic, compute only where the
# driver injects it, and OpenMPI's collective selection for MPI_Allreduce (`mpi`).
SMPI_CFG = ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
            "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no",
            "--cfg=smpi/coll-selector:ompi", "--log=root.thres:warning"]
ALGORITHMS = ["ring", "rd", "hierarchical", "mpi", "auto"]
SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class SimError(Exception):
    pass


def parse_bytes(text):
    text = text.strip()
    scale = SIZE_UNITS.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def parse_time(text):
    """'2.5us' / '1ms' / '3s' -> seconds."""
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    return float(text)


def parse_bandwidth(text):
    """'12.5GBps' -> bytes/s (SimGrid's units: Bps, kBps, MBps, GBps; bps variants / 8)."""
    for unit, scale in (("GBps", 1e9), ("MBps", 1e6), ("kBps", 1e3), ("Bps", 1.0),
                        ("Gbps", 1e9 / 8), ("Mbps", 1e6 / 8), ("bps", 1 / 8)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise SimError(f"bandwidth '{text}' has no SimGrid unit")


def load_platform(name):
    """The <cluster> of sim/platforms/NAME.xml (or a path) as a dict of its parameters."""
    path = name if name.endswith(".xml") else os.path.join(PLATFORM_DIR, name + ".xml")
    if not os.path.exists(path):
        known = sorted(f[:-4] for f in os.listdir(PLATFORM_DIR) if f.endswith(".xml"))
        raise SimError(f"no platform {path}; known: {', '.join(known)}")
    cluster = ET.parse(path).getroot().find("cluster")
    if cluster is None:
        raise SimError(f"{path}: no <cluster> element")
    a = cluster.attrib
    first, last = (int(x) for x in a["radical"].split("-"))
    topo = a.get("topology", "FLAT")
    levels = []
    if topo == "FAT_TREE":  # "L;down1,..;up1,..;parallel1,.."
        parts = a["topo_parameters"].split(";")
        levels = [int(x) for x in parts[1].split(",")]
    return {"name": os.path.basename(path)[:-4], "path": path, "prefix": a["prefix"],
            "suffix": a.get("suffix", ""), "hosts": last - first + 1, "first": first,
            "cores": int(a.get("core", "1")), "bw": parse_bandwidth(a["bw"]),
            "lat": parse_time(a["lat"]), "topology": topo, "down": levels,
            "loopback_bw": parse_bandwidth(a.get("loopback_bw", "498MBps")),
            "loopback_lat": parse_time(a.get("loopback_lat", "15us"))}


def hosts_for(platform, ranks):
    """Host of each rank: `cores` consecutive ranks per host, hosts in order."""
    per_host = platform["cores"]
    needed = math.ceil(ranks / per_host)
    if needed > platform["hosts"]:
        raise SimError(f"{ranks} ranks need {needed} hosts of {per_host} rank(s); platform "
                       f"{platform['name']} has {platform['hosts']}")
    return [platform["first"] + r // per_host for r in range(ranks)]


def route_latency(platform, a, b):
    """Latency host a -> host b: one link up and one down per fat-tree level climbed (a flat
    cluster: the two host links), the loopback on one host."""
    if a == b:
        return platform["loopback_lat"]
    if platform["topology"] != "FAT_TREE":
        return 2 * platform["lat"]
    group, level = 1, 0
    for down in platform["down"]:
        group *= down
        level += 1
        if a // group == b // group:
            break
    return 2 * level * platform["lat"]


def ring_alpha_beta(platform, ranks, nbytes, segment=4 << 20):
    """Alpha-beta time of comm/allreduce_ring with one rank per host: 2 (p - 1) steps, each
    sending one chunk (n / p bytes, in segments of at most `segment`) to the right neighbour.
    The steps of neighbouring ranks pipeline, so the latency term is the mean over the ring's
    links (docs/simulation.md)."""
    hosts = hosts_for(platform, ranks)
    if ranks == 1:
        return 0.0
    alpha = sum(route_latency(platform, hosts[r], hosts[(r + 1) % ranks])
                for r in range(ranks)) / ranks
    chunk = nbytes / ranks
    segments = max(1, math.ceil(chunk / segment))
    return 2 * (ranks - 1) * (segments * alpha + chunk / platform["bw"])


def rd_alpha_beta(platform, ranks, nbytes):
    """comm/allreduce_recursive_doubling for a power of two p: log2 p exchanges of the whole
    message with partners 2^k apart; the step's latency is the farthest pair's."""
    hosts = hosts_for(platform, ranks)
    steps = int(math.log2(ranks))
    total = 0.0
    for k in range(steps):
        alpha = max(route_latency(platform, hosts[r], hosts[r ^ (1 << k)]) for r in range(ranks))
        total += alpha + nbytes / platform["bw"]
    return total


def run_driver(platform, ranks, args, driver=DEFAULT_DRIVER, timeout=600):
    """Runs shardflow-sim under smpirun; returns its CSV rows (dicts)."""
    if not os.access(driver, os.X_OK):
        raise SimError(f"no simulated build at {driver}: configure with SimGrid installed "
                       "(apt-get install libsimgrid-dev) and build the target shardflow_sim")
    hostfile = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            f"shardflow-sim-hosts-{os.getpid()}-{ranks}")
    with open(hostfile, "w") as f:
        f.write("".join(f"{platform['prefix']}{h}{platform['suffix']}\n"
                        for h in hosts_for(platform, ranks)))
    cmd = ["smpirun", "-np", str(ranks), "-platform", platform["path"], "-hostfile", hostfile,
           *SMPI_CFG, driver, *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        os.remove(hostfile)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise SimError(f"simulation of {ranks} ranks on {platform['name']} failed "
                       f"(exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    lines = [ln for ln in proc.stdout.splitlines() if "," in ln and not ln.startswith("[")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def model_buckets(model, bucket_mb, input_shape="28,28,1", program=DEFAULT_BUCKETS):
    """The reducer's gradient buckets of a model preset, in bytes, in backprop order."""
    import json
    if not os.access(program, os.X_OK):
        raise SimError(f"no {program}: build the target shardflow-sim-buckets")
    proc = subprocess.run([program, "--model", model, "--bucket-mb", str(bucket_mb),
                           "--input-shape", input_shape], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SimError(f"shardflow-sim-buckets --model {model}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def step_times(summary):
    """(input, forward, backward) seconds per step of a real run's summary.json: the step
    (wall_s / steps) times the trainer's measured input and compute fractions; compute is split
    1 : 2 between forward and backward (backward computes two products per layer to forward's
    one: docs/simulation.md)."""
    step = summary["wall_s"] / summary["steps"]
    compute = step * summary.get("compute_fraction", 0.0)
    return step * summary.get("input_wait_fraction", 0.0), compute / 3, 2 * compute / 3


def simulate_step(platform, ranks, buckets, times, algorithm="auto", steps=3,
                  driver=DEFAULT_DRIVER):
    """One row of the driver's step replay (dict of floats)."""
    input_s, forward_s, backward_s = times
    rows = run_driver(platform, ranks,
                      ["step", "--buckets", ",".join(str(b) for b in buckets),
                       "--input-s", repr(input_s), "--forward-s", repr(forward_s),
                       "--backward-s", repr(backward_s), "--steps", str(steps),
                       "--algorithm", algorithm], driver)
    return {k: (float(v) if k not in ("algorithm",) else v) for k, v in rows[0].items()}


def simulate_points(platform_name, ranks_list, model, bucket_mb, summary, batch,
                    algorithm="auto", driver=DEFAULT_DRIVER, log=print):
    """Weak-scaling points of the step replay as summary.json-like dicts for
    scaling_report.compute_rows: samples/s = ranks x batch / simulated step."""
    platform = load_platform(platform_name)
    layout = model_buckets(model, bucket_mb)
    times = step_times(summary)
    points = []
    for ranks in ranks_list:
        row = simulate_step(platform, ranks, layout["buckets"], times, algorithm, driver=driver)
        step = row["step_s"]
        log(f"simulate_study: {ranks} ranks on {platform['name']}: step {step * 1e3:.3f} ms, "
            f"all-reduce {row['comm_s'] * 1e3:.3f} ms, exposed {row['exposed_comm_s'] * 1e3:.3f} ms")
        points.append({
            "ranks": ranks, "nodes": math.ceil(ranks / platform["cores"]), "stages": 1, "ways": 1,
            "name": f"sim_r{ranks}", "summary": {
                "ranks": ranks, "steps": 1, "wall_s": step, "samples_per_s": ranks * batch / step,
                "per_rank_batch": batch, "global_batch": ranks * batch,
                "input_wait_fraction": times[0] / step,
                "compute_fraction": (times[1] + times[2]) / step,
                "comm_fraction": row["exposed_comm_s"] / step, "verdict": "SIMULATED"}})
    return points


def allreduce_table(platform, ranks_list, args):
    """Rows: every (ranks, bytes, algorithm) with the alpha-beta prediction where we have one."""
    out = []
    for ranks in ranks_list:
        rows = run_driver(platform, ranks,
                          ["allreduce", "--algorithms", args.algorithms, "--min-bytes",
                           args.min_bytes, "--max-bytes", args.max_bytes, "--step-factor",
                           str(args.step_factor), "--iters", str(args.iters)], args.driver)
        for r in rows:
            nbytes, p = int(r["bytes"]), int(r["ranks"])
            model = {"ring": lambda: ring_alpha_beta(platform, p, nbytes),
                     "rd": lambda: rd_alpha_beta(platform, p, nbytes)
                     if p & (p - 1) == 0 else float("nan")}.get(r["ran"])
            r["alpha_beta"] = model() if model and platform["cores"] == 1 else float("nan")
            out.append(r)
    for r in out:  # the fastest algorithm (auto aside) at the same ranks and size
        same = [s for s in out if s["ranks"] == r["ranks"] and s["bytes"] == r["bytes"]
                and s["algorithm"] != "auto"]
        r["fastest"] = min(same, key=lambda s: float(s["seconds"]))["algorithm"] if same else ""
    return out


def print_allreduce(platform, rows):
    print(f"SIMULATED all-reduce on {platform['name']} (SimGrid SMPI; {' '.join(SMPI_CFG)})")
    print("| ranks | bytes | algorithm | ran | time us | busbw GB/s | alpha-beta us | fastest |")
    print("|---:|---:|---|---|---:|---:|---:|---|")
    for r in rows:
        ab = r["alpha_beta"]
        print(f"| {r['ranks']} | {r['bytes']} | {r['algorithm']} | {r['ran']} "
              f"| {float(r['seconds']) * 1e6:.1f} | {float(r['busbw_GBps']):.3f} "
              f"| {'' if ab != ab else f'{ab * 1e6:.1f}'} | {r['fastest']} |")


def main(argv):
    import json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("allreduce", "step"):
        p = sub.add_parser(name)
        p.add_argument("--platform", required=True, help="sim/platforms/NAME.xml, or a path")
        p.add_argument("--ranks", required=True, help="rank counts, e.g. 16,64,256")
        p.add_argument("--driver", default=DEFAULT_DRIVER)
    a = sub.choices["allreduce"]
    a.add_argument("--algorithms", default=",".join(ALGORITHMS))
    a.add_argument("--min-bytes", default="1K")
    a.add_argument("--max-bytes", default="64M")
    a.add_argument("--step-factor", type=int, default=4)
    a.add_argument("--iters", type=int, default=1)
    s = sub.choices["step"]
    s.add_argument("--model", required=True, help="model preset: mlp, cnn, resnet")
    s.add_argument("--summary", required=True, help="a real run's summary.json")
    s.add_argument("--bucket-mb", type=float, default=4)
    s.add_argument("--algorithm", default="auto")
    args = ap.parse_args(argv)
    try:
        platform = load_platform(args.platform)
        ranks = [int(x) for x in args.ranks.split(",")]
        if args.command == "allreduce":
            print_allreduce(platform, allreduce_table(platform, ranks, args))
            return 0
        with open(args.summary) as f:
            summary = json.load(f)
        points = simulate_points(args.platform, ranks, args.model, args.bucket_mb, summary,
                                 summary.get("per_rank_batch", 1), args.algorithm, args.driver)
        base = points[0]["summary"]
        print(f"SIMULATED weak scaling of {args.model} on {platform['name']}")
        print("| ranks | step ms | samples/s | efficiency |")
        print("|---:|---:|---:|---:|")
        for p in points:
            s_ = p["summary"]
            eff = (s_["samples_per_s"] / base["samples_per_s"]) / (p["ranks"] / points[0]["ranks"])
            print(f"| {p['ranks']} | {s_['wall_s'] * 1e3:.3f} | {s_['samples_per_s']:.0f} "
                  f"| {eff * 100:.1f}% |")
        return 0
    except (SimError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        print(f"simulate_study: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
