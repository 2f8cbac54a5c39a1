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
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLATFORM_DIR = os.path.join(ROOT, "sim", "platforms")
BUILD = os.environ.get("SHARDFLOW_BUILD_DIR", os.path.join(ROOT, "build"))  # tests set it
DEFAULT_DRIVER = os.path.join(BUILD, "sim", "smpi", "shardflow-sim")
DEFAULT_BUCKETS = os.path.join(BUILD, "bin", "shardflow-sim-buckets")
# Every simulation runs with these (docs/simulation.md, "Network model"): the plain CM02
# model (latency + size / bandwidth per link, max-min sharing) without SMPI's piecewise
# factors fitted on another cluster or TCP's reverse (ACK) traffic, compute only where the
# driver injects it, and OpenMPI's collective selection for MPI_Allreduce (`mpi`).
SMPI_CFG = ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
            "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no",
            "--cfg=smpi/coll-selector:ompi", "--cfg=smpi/privatization:no",
            "--log=root.thres:warning"]
# SMPI's copy of OpenMPI's broadcast rule picks a mvapich2 "knomial intra-node" algorithm on
# communicators of 128 ranks or more, which first runs SMPI's SMP set-up: a ring all-gather of
# p^2 messages per new communicator (a 1024-rank job: 60 s of simulation for nothing but
# MPI_Comm_split). There the broadcast is the binomial tree (docs/simulation.md, "Cost").
LARGE_JOB_RANKS = 128
LARGE_JOB_CFG = ["--cfg=smpi/bcast:binomial_tree"]
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
    root = ET.parse(path).getroot()
    cluster = root.find("cluster")
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
            "loopback_lat": parse_time(a.get("loopback_lat", "15us")),
            "bb_bw": parse_bandwidth(a["bb_bw"]) if "bb_bw" in a else float("inf"),
            "config": {p.get("id"): p.get("value") for p in root.findall("config/prop")}}


def smpi_cfg(platform, ranks=0):
    """SMPI_CFG (and LARGE_JOB_CFG from LARGE_JOB_RANKS ranks) less the options the platform
    file's own <config> sets (SimGrid applies those when it loads the file, unless the command
    line sets them): a calibrated platform carries its network model and size-dependent factors
    with it."""
    own = platform.get("config", {})
    cfg = SMPI_CFG + (LARGE_JOB_CFG if ranks >= LARGE_JOB_RANKS else [])
    return [c for c in cfg if not (c.startswith("--cfg=") and c[6:].split(":")[0] in own)]


def bw_factor(platform, nbytes):
    """The platform's smpi/bw-factor for a message of nbytes ("T:f;...": the f of the largest
    T <= nbytes, as SimGrid applies it; 1 without factors)."""
    text = platform.get("config", {}).get("smpi/bw-factor")
    best_threshold, best = -1, 1.0
    for item in (text.split(";") if text else []):
        threshold, factor = item.split(":")
        if best_threshold < int(threshold) <= nbytes:
            best_threshold, best = int(threshold), float(factor)
    return best


RING_SEGMENT_BYTES = 4 << 20  # comm/allreduce.hpp: kDefaultSegmentBytes


def ring_messages(nbytes, ranks):
    """(count, bytes) of the messages one rank sends in one phase of the ring all-reduce: ranks - 1
    steps of a chunk nbytes / ranks, cut into segments of at most RING_SEGMENT_BYTES."""
    chunk = nbytes // ranks
    segments = max(1, math.ceil(chunk / RING_SEGMENT_BYTES))
    return (ranks - 1) * segments, math.ceil(chunk / segments)


def fit_ring_factors(platform, measured_path):
    """smpi/bw-factor from measured 2-rank ring all-reduce times (shardflow-bench allreduce --json
    lines): each phase sends `count` messages of `size` bytes (ring_messages), each taking
    latency + size / (bw x f), so f = (size / bw) / (T / (2 x count) - latency). Sizes measured
    more than once (16 and 64 MiB both travel as 4 MiB segments) get the median f; the smallest
    size's f also covers everything below it. Returns "size:f;..." (largest size first)."""
    import json
    import statistics
    latency = route_latency(platform, 0, 1)
    by_size = {}
    with open(measured_path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r["ranks"] != 2 or r["algorithm"] != "ring":
                continue
            count, size = ring_messages(r["bytes"], 2)
            per_message = r["time_us"] * 1e-6 / (2 * count) - latency
            if per_message <= 0:
                raise SimError(f"{measured_path}: {r['bytes']} bytes took {r['time_us']} us, "
                               f"less than the platform's latency alone")
            by_size.setdefault(size, []).append((size / platform["bw"]) / per_message)
    if not by_size:
        raise SimError(f"{measured_path}: no 2-rank ring rows")
    sizes = sorted(by_size)
    return ";".join(f"{0 if size == sizes[0] else size}:{statistics.median(by_size[size]):.3f}"
                    for size in reversed(sizes))


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
    bw = min(platform["bw"], platform["bb_bw"] / ranks)  # p flows share a backbone at once
    return 2 * (ranks - 1) * (segments * alpha + chunk / bw)


def rd_alpha_beta(platform, ranks, nbytes):
    """comm/allreduce_recursive_doubling for a power of two p: log2 p exchanges of the whole
    message with partners 2^k apart; the step's latency is the farthest pair's."""
    hosts = hosts_for(platform, ranks)
    steps = int(math.log2(ranks))
    total = 0.0
    for k in range(steps):
        alpha = max(route_latency(platform, hosts[r], hosts[r ^ (1 << k)]) for r in range(ranks))
        total += alpha + nbytes / min(platform["bw"], platform["bb_bw"] / ranks)
    return total


def rabenseifner_alpha_beta(platform, ranks, nbytes):
    """MPI's large-message all-reduce (OpenMPI's selection in SMPI; Rabenseifner's algorithm),
    for a power of two p: a reduce-scatter by recursive halving (log2 p steps, partners 2^k
    apart, n / 2^(k+1) bytes each) and an all-gather by recursive doubling, the same steps in
    reverse: 2 sum(alpha_k) + 2 (p - 1) / p n / B. Reductions are not charged (the simulation
    does not charge them either)."""
    hosts = hosts_for(platform, ranks)
    bw = min(platform["bw"], platform["bb_bw"] / ranks)
    total = 0.0
    for k in range(int(math.log2(ranks))):
        alpha = max(route_latency(platform, hosts[r], hosts[r ^ (1 << k)]) for r in range(ranks))
        total += 2 * (alpha + nbytes / 2 ** (k + 1) / bw)
    return total


# comm/allreduce.cpp's ChooseAlgorithm for one rank per host (its thresholds in bytes).
MPI_UP_TO, RD_UP_TO, TWO_RANK_MPI_BELOW, RING_FROM_PER_RANK = 8 << 10, 64 << 10, 8 << 20, 128 << 10
# From 128 hosts MPI's small-message path reduces then broadcasts: recursive doubling instead.
MPI_REDUCES_FIRST_FROM, MPI_REDUCES_FIRST_LONG_BELOW, RD_UP_TO_THERE = 128, 256, 128 << 10


def auto_pick(ranks, nbytes):
    """What `auto` runs across hosts with one rank each (comm/allreduce.cpp ChooseAlgorithm)."""
    reduces_first = ranks >= MPI_REDUCES_FIRST_FROM
    if nbytes <= MPI_UP_TO and not reduces_first:
        return "mpi"
    if nbytes <= RD_UP_TO:
        return "rd"
    if reduces_first and ranks < MPI_REDUCES_FIRST_LONG_BELOW and nbytes <= RD_UP_TO_THERE:
        return "rd"
    if ranks == 2 and nbytes < TWO_RANK_MPI_BELOW:
        return "mpi"
    return "mpi" if nbytes < ranks * RING_FROM_PER_RANK else "ring"


# OpenMPI's fixed rule for MPI_Allreduce with a commutative op (coll/tuned, as SimGrid's `ompi`
# selector copies it): (below this many ranks, [(below this many bytes, algorithm), ...]),
# the last algorithm for larger messages. rdb: recursive doubling; redbcast: reduce, then
# broadcast; ring / segring: the ring, unsegmented or segmented; rab: Rabenseifner.
OMPI_ALLREDUCE = [
    (4, [(8, "ring"), (4096, "rdb"), (8192, "ring"), (16384, "rdb"), (65536, "ring"),
         (262144, "segring")], "rab"),
    (8, [(16, "ring"), (8192, "rdb")], "rab"),
    (16, [(8192, "rdb")], "rab"),
    (32, [(64, "segring"), (4096, "rdb")], "rab"),
    (64, [(128, "segring")], "rab"),
    (128, [(262144, "rdb")], "rab"),
    (256, [(131072, "redbcast"), (262144, "rdb")], "rab"),
    (512, [(4096, "redbcast")], "rab"),
    (2048, [(2048, "redbcast"), (16384, "rdb")], "rab"),
    (4096, [(2048, "redbcast"), (4096, "segring"), (16384, "rdb")], "rab"),
    (None, [(2048, "redbcast"), (16384, "segring"), (32768, "rdb")], "rab"),
]


def ompi_allreduce(ranks, nbytes):
    """The algorithm OpenMPI's rule (OMPI_ALLREDUCE) runs for nbytes on `ranks`."""
    for below_ranks, sizes, larger in OMPI_ALLREDUCE:
        if below_ranks is None or ranks < below_ranks:
            return next((alg for below, alg in sizes if nbytes < below), larger)
    raise AssertionError("unreachable")


def mpi_alpha_beta(platform, ranks, nbytes):
    """Alpha-beta time of MPI_Allreduce as OpenMPI's rule runs it (a power of two p) where it
    runs recursive doubling or Rabenseifner; NaN for the reduce-and-broadcast (whose segmented
    reduce we have not modelled: 128 ranks, 64 KiB took 396 us simulated where two binomial
    trees would take 93) and the ring variants."""
    algorithm = ompi_allreduce(ranks, nbytes)
    if algorithm == "rab":
        return rabenseifner_alpha_beta(platform, ranks, nbytes)
    if algorithm == "rdb":
        return rd_alpha_beta(platform, ranks, nbytes)
    return float("nan")


def mpi_bound(platform, ranks, nbytes):
    """mpi_alpha_beta, with Rabenseifner's time where it has none (a bound needs a number)."""
    t = mpi_alpha_beta(platform, ranks, nbytes)
    return rabenseifner_alpha_beta(platform, ranks, nbytes) if math.isnan(t) else t


def auto_alpha_beta(platform, ranks, nbytes):
    """Alpha-beta time of what `auto` picks, for a power of two p (MPI: mpi_bound)."""
    pick = auto_pick(ranks, nbytes)
    if pick == "ring":
        return ring_alpha_beta(platform, ranks, nbytes)
    if pick == "rd":
        return rd_alpha_beta(platform, ranks, nbytes)
    return mpi_bound(platform, ranks, nbytes)


DRIVER_TIMEOUT = [600.0]  # seconds one simulation may run (--timeout)
# Memory of a simulation (docs/simulation.md, "Cost"): about 1 MiB per simulated rank (4.0 GB
# at 4096 ranks), plus what each rank holds for real while one all-reduce runs: SMPI's own
# MPI_Allreduce buffers (2 x the size; a CNN step at 512 ranks took 13.2 GB), recursive
# doubling's scratch (the whole message, from aligned_alloc, which SMPI does not fold) and the
# ring's two segment slots. Plain mallocs of 1 MiB or more are folded onto one copy.
SIM_BYTES_PER_RANK = 1 << 20


def mem_available():
    """Bytes of memory a simulation may use: MemAvailable of /proc/meminfo, or
    SHARDFLOW_SIM_MEM_AVAILABLE (bytes) when set (tests); None where neither exists."""
    if os.environ.get("SHARDFLOW_SIM_MEM_AVAILABLE"):
        return int(os.environ["SHARDFLOW_SIM_MEM_AVAILABLE"])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def real_bytes_per_rank(algorithm, ranks, nbytes):
    """Bytes one simulated rank holds for real while `algorithm` (auto: its pick) all-reduces
    nbytes (see SIM_BYTES_PER_RANK)."""
    ran = auto_pick(ranks, nbytes) if algorithm == "auto" else algorithm
    if ran in ("mpi", "hierarchical"):  # hierarchical: MPI_Reduce and MPI_Bcast inside nodes
        return 2 * nbytes
    if ran == "rd":
        return nbytes
    if ran == "ring":
        return 2 * min(-(-nbytes // ranks), RING_SEGMENT_BYTES)
    return 0


def memory_shortfall(ranks, runs):
    """None when simulating `runs`, (algorithm, bytes) pairs, on `ranks` fits in 90% of the
    available memory; else a phrase saying what the largest of them would need."""
    per_rank, algorithm, nbytes = max(((real_bytes_per_rank(a, ranks, n), a, n) for a, n in runs),
                                      default=(0, "", 0))
    need = ranks * (per_rank + SIM_BYTES_PER_RANK)
    available = mem_available()
    if available is None or need <= 0.9 * available:
        return None
    return (f"needs about {need / 1e9:.1f} GB ({algorithm} of {nbytes} bytes holds {per_rank} "
            f"bytes per simulated rank for real: SMPI's MPI_Allreduce buffers, recursive "
            f"doubling's scratch), {available / 1e9:.1f} GB available")


def run_driver(platform, ranks, args, driver=DEFAULT_DRIVER, timeout=None):
    """Runs shardflow-sim under smpirun; returns its CSV rows (dicts)."""
    if not os.access(driver, os.X_OK):
        raise SimError(f"no simulated build at {driver}: configure with SimGrid installed "
                       "(apt-get install libsimgrid-dev) and build the target shardflow_sim")
    hostfile = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            f"shardflow-sim-hosts-{os.getpid()}-{ranks}")
    with open(hostfile, "w") as f:
        f.write("".join(f"{platform['prefix']}{h}{platform['suffix']}\n"
                        for h in hosts_for(platform, ranks)))
    # Without --check the data do not matter: every malloc of 1 MiB or more (a rank's scratch,
    # e.g. recursive doubling's whole-message receive buffer) is folded onto one physical copy
    # too, so 256 ranks x 64 MiB do not need 16 GB.
    fold = [] if "--check" in args else ["--cfg=smpi/auto-shared-malloc-thresh:1048576"]
    cmd = ["smpirun", "-np", str(ranks), "-platform", platform["path"], "-hostfile", hostfile,
           *smpi_cfg(platform, ranks), *fold, driver, *args]
    limit = timeout if timeout is not None else DRIVER_TIMEOUT[0]
    try:
        # A session of its own: on a timeout the whole group goes (smpirun is a script; the
        # simulation, its child, would outlive it).
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise SimError(f"simulation of {ranks} ranks on {platform['name']} took more "
                               f"than {limit:.0f} s (--timeout): {' '.join(cmd)}") from None
    finally:
        os.remove(hostfile)
    if proc.returncode != 0:
        tail = "\n".join((stdout + stderr).strip().splitlines()[-5:])
        raise SimError(f"simulation of {ranks} ranks on {platform['name']} failed "
                       f"(exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    lines = [ln for ln in stdout.splitlines() if "," in ln and not ln.startswith("[")]
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
                    algorithm="auto", driver=DEFAULT_DRIVER, log=print, input_shape="28,28,1"):
    """Weak-scaling points of the step replay as summary.json-like dicts for
    scaling_report.compute_rows: samples/s = ranks x batch / simulated step."""
    platform = load_platform(platform_name)
    layout = model_buckets(model, bucket_mb, input_shape)
    times = step_times(summary)
    points = []
    for ranks in ranks_list:
        short = memory_shortfall(ranks, [(algorithm, b) for b in layout["buckets"]])
        if short:
            raise SimError(f"the step of {model} on {ranks} simulated ranks {short}: leave out "
                           f"that rank count")
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


def study_model(spec):
    """(model spec, input shape, bucket_mb) of a study's training config and overrides."""
    import configparser
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    path = spec["config"] if os.path.isabs(spec["config"]) else os.path.join(ROOT, spec["config"])
    if not cfg.read(path):
        raise SimError(f"cannot read the study's config {path}")
    found = {"model.spec": cfg.get("model", "spec", fallback="mlp"),
             "model.input_shape": cfg.get("model", "input_shape", fallback="28,28,1"),
             "dist.bucket_mb": cfg.get("dist", "bucket_mb", fallback="4")}
    for flag in spec["overrides"]:
        key, _, value = flag.lstrip("-").partition("=")
        if key in found:
            found[key] = value
    return (found["model.spec"].strip(), found["model.input_shape"].replace(" ", ""),
            float(found["dist.bucket_mb"]))


def run_simulated_study(spec, args, report, out_dir):
    """slurm/scaling_study.py --simulate PLATFORM --summary RUN/summary.json: the study's weak
    scaling points replayed on the platform (simulate_points), written and printed as a real
    study's results.md / results.csv, every row's verdict SIMULATED. Returns the exit code."""
    import json
    if spec["scaling"] != "weak":
        raise SimError("--simulate replays weak scaling only (a fixed batch per replica)")
    if any((s, t) != (1, 1) for s, t in spec["grids"]):
        raise SimError("--simulate replays data-parallel points only (grid 1x1)")
    if not args.summary:
        raise SimError("--simulate needs --summary RUN/summary.json (a real run's step times)")
    with open(args.summary) as f:
        summary = json.load(f)
    model, shape, bucket_mb = study_model(spec)
    ranks = sorted({p[0] for p in spec["points"]})
    batch = int(summary.get("per_rank_batch") or spec["batch"])
    if batch != int(spec["batch"]):
        print(f"scaling_study: note: the step times are of {args.summary}'s per-rank batch "
              f"{batch}, not the spec's {spec['batch']}; samples/s counts {batch}")
    points = simulate_points(args.simulate, ranks, model, bucket_mb, summary, batch,
                             input_shape=shape)
    rows = report.compute_rows(points, [(1, 1)])
    shown = dict(spec, name=f"{spec['name']}: SIMULATED on {args.simulate} (SimGrid SMPI, "
                 f"step times from {args.summary}; docs/simulation.md)")
    report.write_csv(os.path.join(out_dir, "results.csv"), rows)
    report.write_markdown(os.path.join(out_dir, "results.md"), shown, rows, points)
    with open(os.path.join(out_dir, "results.md")) as f:
        sys.stdout.write(f.read())
    print(f"scaling_study: SIMULATED; wrote {out_dir}/results.md, results.csv")
    return 0


def allreduce_table(platform, ranks_list, args):
    """Rows: every (ranks, bytes, algorithm) with the alpha-beta prediction where we have one."""
    out = []
    low, high = parse_bytes(args.min_bytes), parse_bytes(args.max_bytes)
    if args.step_factor < 2 or low < 4 or low > high:
        raise SimError(f"bad size range {args.min_bytes}..{args.max_bytes} x{args.step_factor}: "
                       "4 <= --min-bytes <= --max-bytes and --step-factor >= 2")
    sizes = []
    while low <= high:
        sizes.append(low)
        low *= args.step_factor
    for ranks in ranks_list:
        short = memory_shortfall(ranks, [(a, b) for a in args.algorithms.split(",")
                                         for b in sizes])
        if short:
            raise SimError(f"the all-reduce on {ranks} simulated ranks {short}: lower "
                           f"--max-bytes or the rank count")
        rows = run_driver(platform, ranks,
                          ["allreduce", "--algorithms", args.algorithms, "--min-bytes",
                           args.min_bytes, "--max-bytes", args.max_bytes, "--step-factor",
                           str(args.step_factor), "--iters", str(args.iters)], args.driver)
        for r in rows:
            nbytes, p = int(r["bytes"]), int(r["ranks"])
            pow2 = p & (p - 1) == 0
            model = {"ring": lambda: ring_alpha_beta(platform, p, nbytes),
                     "rd": lambda: rd_alpha_beta(platform, p, nbytes) if pow2 else float("nan"),
                     "mpi": lambda: mpi_alpha_beta(platform, p, nbytes)
                     if pow2 else float("nan")}.get(r["ran"])
            r["alpha_beta"] = model() if model and platform["cores"] == 1 else float("nan")
            out.append(r)
    for r in out:  # the fastest algorithm (auto aside) at the same ranks and size
        same = [s for s in out if s["ranks"] == r["ranks"] and s["bytes"] == r["bytes"]
                and s["algorithm"] != "auto"]
        r["fastest"] = min(same, key=lambda s: float(s["seconds"]))["algorithm"] if same else ""
    return out


def print_allreduce(platform, rows):
    large = [r for r in rows if int(r["ranks"]) >= LARGE_JOB_RANKS]
    extra = f"; from {LARGE_JOB_RANKS} ranks {' '.join(LARGE_JOB_CFG)}" if large else ""
    print(f"SIMULATED all-reduce on {platform['name']} (SimGrid SMPI; "
          f"{' '.join(smpi_cfg(platform))}{extra})")
    print("| ranks | bytes | algorithm | ran | time us | busbw GB/s | alpha-beta us | fastest |")
    print("|---:|---:|---|---|---:|---:|---:|---|")
    for r in rows:
        ab = r["alpha_beta"]
        print(f"| {r['ranks']} | {r['bytes']} | {r['algorithm']} | {r['ran']} "
              f"| {float(r['seconds']) * 1e6:.1f} | {float(r['busbw_GBps']):.3f} "
              f"| {'' if ab != ab else f'{ab * 1e6:.1f}'} | {r['fastest']} |")


def validate(platform, measured_path, driver=DEFAULT_DRIVER):
    """Measured all-reduce times (shardflow-bench allreduce --json lines) against the
    simulation of the same (ranks, algorithm, bytes) on `platform`; prints a table and returns
    the rows (measured_us, simulated_us, error = simulated / measured - 1)."""
    import json
    measured = {}
    with open(measured_path) as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                measured[(r["ranks"], r["algorithm"], r["bytes"])] = r["time_us"]
    rows = []
    for ranks in sorted({k[0] for k in measured}):
        algorithms = sorted({k[1] for k in measured if k[0] == ranks})
        sizes = sorted({k[2] for k in measured if k[0] == ranks})
        sim = run_driver(platform, ranks, ["allreduce", "--algorithms", ",".join(algorithms),
                                           "--sizes", ",".join(map(str, sizes)), "--iters", "3"],
                         driver)
        for r in sim:
            key = (ranks, r["algorithm"], int(r["bytes"]))
            if key in measured:
                got = float(r["seconds"]) * 1e6
                rows.append({"ranks": ranks, "algorithm": key[1], "bytes": key[2],
                             "measured_us": measured[key], "simulated_us": got,
                             "error": got / measured[key] - 1})
    print(f"SIMULATED on {platform['name']} vs measured ({measured_path})")
    print("| ranks | algorithm | bytes | measured us | simulated us | simulated / measured |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['ranks']} | {r['algorithm']} | {r['bytes']} | {r['measured_us']:.1f} "
              f"| {r['simulated_us']:.1f} | {r['error'] + 1:.2f} |")
    within = sum(1 for r in rows if abs(r["error"]) <= 0.30)
    print(f"within 30%: {within} of {len(rows)}")
    return rows


def print_step_table(platform, ranks_list, args, summary):
    """Weak scaling of one model: the simulated step (up to --max-simulated-ranks) next to the
    alpha-beta bound: compute + every bucket's all-reduce by the algorithm --algorithm names
    (auto: what auto picks for the bucket's size, auto_pick), none of it overlapped."""
    layout = model_buckets(args.model, args.bucket_mb)
    times = step_times(summary)
    compute = sum(times)
    print(f"SIMULATED weak scaling of {args.model} ({layout['parameters']} parameters, buckets "
          f"{layout['buckets']} bytes) on {platform['name']}; per step input {times[0] * 1e3:.3f} "
          f"ms, forward {times[1] * 1e3:.3f} ms, backward {times[2] * 1e3:.3f} ms "
          f"({args.summary})")
    print(f"| ranks | simulated step ms | all-reduce ms | exposed ms | efficiency "
          f"| alpha-beta all-reduce ms ({args.algorithm}) | alpha-beta efficiency bound |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for ranks in ranks_list:
        model = {"ring": ring_alpha_beta, "rd": rd_alpha_beta,
                 "mpi": mpi_bound}.get(args.algorithm, auto_alpha_beta)
        ab = sum(model(platform, ranks, b) for b in layout["buckets"])
        cells = ["not simulated"] + [""] * 3
        short = memory_shortfall(ranks, [(args.algorithm, b) for b in layout["buckets"]])
        if ranks <= args.max_simulated_ranks and short:
            cells[0] = f"not simulated: {short}"
        elif ranks <= args.max_simulated_ranks:
            r = simulate_step(platform, ranks, layout["buckets"], times, args.algorithm,
                              driver=args.driver)
            cells = [f"{r['step_s'] * 1e3:.3f}", f"{r['comm_s'] * 1e3:.3f}",
                     f"{r['exposed_comm_s'] * 1e3:.3f}", f"{compute / r['step_s'] * 100:.2f}%"]
        print(f"| {ranks} | {' | '.join(cells)} | {ab * 1e3:.3f} "
              f"| {compute / (compute + ab) * 100:.2f}% |")


def main(argv):
    import json
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--platform", default="local_calibrated")
    v.add_argument("--measured", required=True, help="shardflow-bench allreduce --json output")
    v.add_argument("--driver", default=DEFAULT_DRIVER)
    fit = sub.add_parser("fit-factors", help="smpi/bw-factor from measured 2-rank ring times")
    fit.add_argument("--platform", default="local_calibrated")
    fit.add_argument("--measured", required=True, help="shardflow-bench allreduce --json output")
    for name in ("allreduce", "step"):
        p = sub.add_parser(name)
        p.add_argument("--platform", required=True, help="sim/platforms/NAME.xml, or a path")
        p.add_argument("--ranks", required=True, help="rank counts, e.g. 16,64,256")
        p.add_argument("--driver", default=DEFAULT_DRIVER)
        p.add_argument("--timeout", type=float, default=600,
                       help="seconds one simulation may take (default 600; 4096 ranks need more)")
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
    s.add_argument("--max-simulated-ranks", type=int, default=4096,
                   help="larger rank counts get the alpha-beta bound only (default 4096; so do "
                   "counts whose simulation would not fit in memory)")
    args = ap.parse_args(argv)
    DRIVER_TIMEOUT[0] = getattr(args, "timeout", DRIVER_TIMEOUT[0])
    try:
        platform = load_platform(args.platform)
        if args.command == "validate":
            validate(platform, args.measured, args.driver)
            return 0
        if args.command == "fit-factors":
            print(fit_ring_factors(platform, args.measured))
            return 0
        ranks = [int(x) for x in args.ranks.split(",")]
        if args.command == "allreduce":  # one table per rank count, printed as it finishes
            for r in ranks:
                print_allreduce(platform, allreduce_table(platform, [r], args))
                sys.stdout.flush()
            return 0
        with open(args.summary) as f:
            summary = json.load(f)
        print_step_table(platform, ranks, args, summary)
        return 0
    except (SimError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        print(f"simulate_study: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
