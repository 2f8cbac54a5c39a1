#!/usr/bin/python3
"""Run a scaling study of shardflow-train and report speed-up and efficiency.

    slurm/scaling_study.py SPEC.ini --mode mpirun|sbatch --out DIR [--repeat N] [options]

--ranks 1,2 (and --nodes, --grids, --scaling, --batch, --config, --overrides) replace the
spec's [study] values for this run, so a study on fewer ranks needs no copy of the spec.

SPEC.ini (see configs/studies/):

    [study]
    config    = configs/fmnist_mlp.ini     # the training config every point runs
    ranks     = 1,2,4                      # total rank counts, one point each
    nodes     = 1                          # node counts: one value for every point, or one per rank count
    grids     = 1x1,2x1                    # optional, SxT: S stages x T tensor ways (default 1x1)
    scaling   = weak                       # weak: fixed batch per replica; strong: fixed global
    batch     = 64                         # the per-replica (weak) or global (strong) batch
    overrides = --train.max_steps=200      # extra flags for every run
    trainer   = build/bin/shardflow-train  # optional

The points are every (ranks, nodes) pair times every grid SxT whose S*T divides the ranks (the
others are skipped with one line each; a grid that fits no rank count is a spec error). A point
of R ranks on grid SxT has D = R / (S*T) data replicas; batch counts replicas, as the trainer
does (weak: --train.batch_semantics=per_rank, B samples per replica; strong: global, B split over
the D replicas). Each run of a point is `TRAINER --config CONFIG --output DIR/points/RUN
--train.batch_size=B --train.batch_semantics=per_rank|global --dist.pipeline_stages=S
--dist.tensor_parallel=T OVERRIDES` (the overrides may not set the grid) through
slurm/launch.sh, either
  --mode mpirun  with mpirun on this machine or inside an allocation (--oversubscribe when the
                 ranks outnumber the cores; --mpirun-args="..." passes flags through; --mpirun replaces
                 the mpirun command, e.g. with tests/slurm/netns_cluster.sh mpirun CLUSTERDIR), or
  --mode sbatch  one sbatch job per run, chained with --dependency=afterany so they run one
                 after another; the driver polls squeue/scontrol/sacct until all end (--timeout
                 per run) and collects every output. --sbatch-args="..." passes flags
                 through (--launcher mpirun: mpirun instead of srun --mpi=pmix in the jobs).

--repeat N runs every point N times (the points in turn: each point once, then each again). A
point's first run goes to DIR/points/NAME (NAME is rR_nN on grid 1x1, rR_nN_gSxT otherwise), its
K-th run to DIR/points/NAME_runK, with point.json saying what ran there.

Rerunning into the same DIR resumes the study: every finished run is kept (a line says so) and
only the missing runs start, each in a new folder: an interrupted study completes, a failed point
is retried, a larger --repeat adds runs, more --ranks add points. Nothing is deleted and no run
writes into another's folder; a folder whose runs had other settings (trainer, config or its
contents, scaling, batch, overrides) is refused: give a new --out for a clean rerun. In sbatch
mode a job of an earlier run still in the queue is refused too (wait for it, or scancel it).

Then it reads the summary.json of every finished run in DIR (earlier ones too) and writes
DIR/results.md, DIR/results.csv and DIR/scaling.png (speed-up and efficiency against ranks, with
the ideal line; needs gnuplot). A row is the median of the point's runs: samples/s with its
min-max, every run's figure in results.csv; speed-up and efficiency are per grid, from the
medians, over the smallest rank count of the same grid. Each file is replaced by a temporary
file's rename; with no finished run at all an existing table is left as it was, and a plot that
cannot be drawn leaves the earlier scaling.png.

A point whose ranks x threads per node outnumber the cores the launcher had is marked
"oversubscribed: 4 ranks on 2 cores" in the table and the report: its efficiency measures ranks
taking turns, not scaling. The cores are, in mpirun mode, this machine's CPUs (its affinity
mask, as taskset or a cgroup narrows it; taken for every node's) or inside a Slurm allocation
its CPUs per node
(SLURM_JOB_CPUS_PER_NODE); in sbatch mode the CPUs per node each job was given (the job logs
them). Threads per rank: train.threads from the overrides or config, else 1 (slurm/launch.sh
gives each rank its share of the cores).

--simulate PLATFORM --summary RUN/summary.json runs no trainer: the weak-scaling, data-parallel
points are replayed on a SimGrid platform of sim/platforms/ with RUN's step times
(slurm/simulate_study.py, docs/simulation.md) and the same table is written, marked SIMULATED
(refused in a DIR holding real runs).

A failed run prints its log tail; the study goes on unless --stop-on-failure. A run that exits 0
without a summary.json is an error naming the point. Exit status: 0 every point has its runs, 1
some run failed (the table holds the finished ones), 2 bad spec, arguments or output folder,
130 interrupted (rerun the same command to resume). Standard library only.
"""

import argparse
import configparser
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout for the imports below
from scaling_report import compute_rows, grid_text, oversubscription, plural, point_label, \
    run_text, write_csv, write_markdown, write_plot, write_atomic  # noqa: E402
import study_folder  # noqa: E402
from study_folder import FolderError, point_name  # noqa: E402

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(SOURCE_DIR, "slurm", "launch.sh")
TAIL_LINES = 20


class SpecError(Exception):
    pass


def parse_int_list(text, what, spec_path):
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise SpecError(f"{spec_path}: [study] {what} = '{text}': expected comma-separated integers")
    if not values or any(v < 1 for v in values):
        raise SpecError(f"{spec_path}: [study] {what} = '{text}': need at least one value, all >= 1")
    return values


def parse_grids(text, spec_path):
    """'1x1,2x1' -> [(1, 1), (2, 1)]: S pipeline stages x T tensor ways, both >= 1, no repeats."""
    grids = []
    for entry in text.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)x(\d+)", entry)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise SpecError(f"{spec_path}: [study] grids = '{text}': bad entry '{entry}': expected "
                            "SxT (pipeline stages x tensor ways, both >= 1), e.g. 1x1,2x1,2x2")
        grid = (int(m.group(1)), int(m.group(2)))
        if grid in grids:
            raise SpecError(f"{spec_path}: [study] grids = '{text}': {entry} given twice")
        grids.append(grid)
    return grids


def grid_points(pairs, grids, spec_path):
    """Every (ranks, nodes) x grid where S*T divides ranks, as (ranks, nodes, S, T), grid by grid;
    and one line per skipped point. A grid that fits no rank count is a SpecError."""
    points, skipped = [], []
    for stages, ways in grids:
        fits = [(r, n) for r, n in pairs if r % (stages * ways) == 0]
        if not fits:
            raise SpecError(f"{spec_path}: [study] grids: {stages}x{ways} fits none of the rank "
                            f"counts {','.join(str(r) for r, _ in pairs)} ({stages * ways} ranks "
                            "per replica)")
        for ranks, nodes in pairs:
            name = point_name(ranks, nodes, stages, ways)
            if (ranks, nodes) not in fits:
                skipped.append(f"{name}: {ranks} ranks do not factor into data replicas x "
                               f"{grid_text(stages, ways)}")
                continue
            points.append((ranks, nodes, stages, ways))
            per_node = ranks // nodes
            if ways > 1 and per_node % ways:
                print(f"scaling_study: warning: point {name}: {ways} tensor ways do not fit "
                      f"{per_node} ranks per node, so some tensor groups span nodes",
                      file=sys.stderr)
    return points, skipped


# [study] keys that the command line may set (--ranks 1,2 ...), replacing the spec's value.
AXES = ("config", "ranks", "nodes", "grids", "scaling", "batch", "overrides")
# Flags the grids axis sets; the overrides may not set them too.
GRID_FLAGS = ("--dist.pipeline_stages", "--dist.tensor_parallel")


def load_spec(path, replace=None):
    """Returns a dict: config, points [(ranks, nodes, stages, ways)], skipped [line], scaling,
    batch, overrides, trainer, name. `replace` maps [study] keys to values given on the command
    line; they win over the file."""
    parser = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    try:
        with open(path) as f:
            parser.read_file(f)
    except (OSError, configparser.Error) as e:
        raise SpecError(f"{path}: cannot read study spec: {e}")
    if not parser.has_section("study"):
        raise SpecError(f"{path}: no [study] section")
    s = parser["study"]
    for key, value in (replace or {}).items():
        if value is not None:
            s[key] = value
    known = {"name", "config", "ranks", "nodes", "grids", "scaling", "batch", "overrides",
             "trainer"}
    for key in s:
        if key not in known:
            raise SpecError(f"{path}: [study] unknown key '{key}' (known: {', '.join(sorted(known))})")
    for key in ("config", "ranks", "scaling", "batch"):
        if key not in s:
            raise SpecError(f"{path}: [study] missing key '{key}'")
    ranks = parse_int_list(s["ranks"], "ranks", path)
    nodes = parse_int_list(s.get("nodes", "1"), "nodes", path)
    if len(nodes) == 1:
        nodes = nodes * len(ranks)
    if len(nodes) != len(ranks):
        raise SpecError(f"{path}: [study] nodes has {len(nodes)} values but ranks has {len(ranks)}")
    for r, n in zip(ranks, nodes):
        if r % n:
            raise SpecError(f"{path}: [study] {r} ranks do not split evenly over {n} nodes")
    grids = parse_grids(s.get("grids", "1x1"), path)
    overrides = shlex.split(s.get("overrides", ""))
    for flag in overrides:
        if flag.split("=", 1)[0] in GRID_FLAGS:
            raise SpecError(f"{path}: [study] overrides set {flag.split('=', 1)[0]}: give the "
                            "grid with grids = SxT (--grids) instead")
    scaling = s["scaling"].strip()
    if scaling not in ("weak", "strong"):
        raise SpecError(f"{path}: [study] scaling = '{scaling}': expected weak or strong")
    try:
        batch = int(s["batch"])
    except ValueError:
        batch = 0
    if batch < 1:
        raise SpecError(f"{path}: [study] batch = '{s['batch']}': expected an integer >= 1")
    points, skipped = grid_points(list(zip(ranks, nodes)), grids, path)
    if scaling == "strong":
        for r, _, stages, ways in points:
            replicas = r // (stages * ways)
            if batch % replicas:
                print(f"scaling_study: warning: global batch {batch} does not divide by "
                      f"{plural(replicas, 'replica', 'replicas')} ({r} ranks, grid "
                      f"{stages}x{ways}); the trainer decides how to split it", file=sys.stderr)
    return {
        "name": s.get("name", os.path.splitext(os.path.basename(path))[0]),
        "config": s["config"].strip(),
        "points": points,
        "skipped": skipped,
        "grids": grids,
        "scaling": scaling,
        "batch": batch,
        "overrides": overrides,
        "trainer": s.get("trainer", "build/bin/shardflow-train").strip(),
    }


def resolve(path):
    return path if os.path.isabs(path) else os.path.join(SOURCE_DIR, path)


def trainer_command(spec, args, run):
    semantics = "per_rank" if spec["scaling"] == "weak" else "global"
    cmd = [resolve(args.trainer or spec["trainer"]), "--config", resolve(spec["config"]),
           "--output", run["dir"], f"--train.batch_size={spec['batch']}",
           f"--train.batch_semantics={semantics}", f"--dist.pipeline_stages={run['stages']}",
           f"--dist.tensor_parallel={run['ways']}"] + spec["overrides"]
    if args.no_launch_wrapper:
        return cmd
    return [LAUNCH] + shlex.split(args.launch_args) + ["--"] + cmd


def log_tail(path, lines=TAIL_LINES):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})\n"


def run_title(run):
    """'r2_n1' for a point's first run, 'r2_n1 run 2' for its later ones."""
    return run["name"] + (f" run {run['run']}" if run["run"] > 1 else "")


def report_failure(run, why):
    sys.stderr.write(f"scaling_study: point {run['name']} ({point_label(run)}){run_text(run)} "
                     f"failed: {why}\n"
                     f"--- last {TAIL_LINES} lines of {run['log']} ---\n{log_tail(run['log'])}"
                     f"--- end of {run['log']} ---\n")


# ---- cores and threads ----------------------------------------------------------------------


def slurm_cpus(text):
    """Slurm's CPUs per node ('4(x2),2', as SLURM_JOB_CPUS_PER_NODE) -> the smallest, or None."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x\d+\))?", part.strip())
        if not m:
            return None
        counts.append(int(m.group(1)))
    return min(counts) if counts else None


def mpirun_cores():
    """The cores per node mpirun may use: inside a Slurm allocation its CPUs per node, else this
    machine's (its affinity mask: what taskset, a cgroup or an outer launcher left us)."""
    allocated = slurm_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", ""))
    if allocated:
        return allocated
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def threads_per_rank(spec, args):
    """The intra-op threads of each rank: train.threads from the overrides or the config when
    set; without slurm/launch.sh SHARDFLOW_THREADS; else 1 (launch.sh, and the trainer without
    it, give each rank its share of the cores)."""
    for flag in reversed(spec["overrides"]):
        key, _, value = flag.partition("=")
        if key == "--train.threads":
            return int(value) if value.isdigit() and int(value) > 0 else 1
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    try:
        cfg.read(resolve(spec["config"]))
        value = cfg.get("train", "threads", fallback="0").strip()
    except configparser.Error:
        value = "0"
    if value.isdigit() and int(value) > 0:
        return int(value)
    value = os.environ.get("SHARDFLOW_THREADS", "")
    return int(value) if args.no_launch_wrapper and value.isdigit() and int(value) > 0 else 1


# The first line of a job's log (JOB_SCRIPT) names the CPUs per node Slurm gave it.
JOB_CPUS_RE = re.compile(r"scaling_study point \S+: .*, CPUs per node (\S+)$")


def run_cores(run_dir, record):
    """The cores per node a run had: from its point.json, or the first lines of its job log."""
    if (record or {}).get("cores"):
        return record["cores"]
    try:
        with open(os.path.join(run_dir, "run.log"), errors="replace") as f:
            head = [f.readline().rstrip("\n") for _ in range(5)]
    except OSError:
        return None
    for line in head:
        m = JOB_CPUS_RE.match(line)
        if m:
            return slurm_cpus(m.group(1))
    return None


# ---- run folders ----------------------------------------------------------------------------


def begin_run(run):
    """Creates the run's own folder (never an earlier run's) and its point.json."""
    os.makedirs(run["dir"])
    run["record"] = {"point": run["name"], "run": run["run"], "ranks": run["ranks"],
                     "nodes": run["nodes"], "stages": run["stages"], "ways": run["ways"],
                     "settings": run["settings"], "threads": run["threads"],
                     "cores": run.get("cores"), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    save_record(run)


def save_record(run):
    for key in ("command", "job", "cores"):
        if run.get(key):
            run["record"][key] = run[key]
    study_folder.write_json_atomic(os.path.join(run["dir"], study_folder.RECORD), run["record"])


def end_run(run):
    """Records the run's outcome in its point.json."""
    run["record"]["status"] = "finished" if "summary" in run else f"failed: {run['error']}"
    run["record"]["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    save_record(run)


# ---- mpirun mode ----------------------------------------------------------------------------


def stop_group(proc):
    """SIGTERM to the run's process group, SIGKILL 10 s later if it is still there."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def run_logged(cmd, log_path, timeout):
    """Runs cmd in its own session with its output in log_path: its exit status, or None when it
    ran past timeout (stopped). An interrupt (Ctrl-C) stops it too, then goes on up."""
    with open(log_path, "w") as log:
        log.write(f"$ {shlex.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=SOURCE_DIR,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return None
        except KeyboardInterrupt:
            stop_group(proc)
            raise


def run_mpirun(spec, args, runs, cores):
    for run in runs:
        ranks, nodes = run["ranks"], run["nodes"]
        cmd = shlex.split(args.mpirun) + ["-np", str(ranks)]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if nodes > 1:
            cmd += ["--map-by", f"ppr:{ranks // nodes}:node"]
        elif ranks > cores:
            cmd.append("--oversubscribe")
        run["command"] = shlex.join(cmd + shlex.split(args.mpirun_args)
                                    + trainer_command(spec, args, run))
        run["cores"] = cores
        begin_run(run)
        print(f"scaling_study: [{run_title(run)}] {run['command']}", flush=True)
        rc = run_logged(shlex.split(run["command"]), run["log"], args.timeout)
        if rc is None:
            run["error"] = f"timed out after {args.timeout} s"
        elif rc != 0:
            run["error"] = f"exit status {rc}"
        else:
            study_folder.read_summary(run)
        end_run(run)
        if "error" in run:
            report_failure(run, run["error"])
            if args.stop_on_failure:
                return


# ---- sbatch mode ----------------------------------------------------------------------------

JOB_SCRIPT = """#!/bin/bash
#SBATCH --job-name={job_name}
#SBATCH --nodes={nodes}
#SBATCH --ntasks={ranks}
#SBATCH --time={minutes}
#SBATCH --output={log}
{extra}set -euo pipefail
cd {source_dir}
echo "scaling_study point {name}: $SLURM_JOB_NUM_NODES nodes ($SLURM_JOB_NODELIST), {ranks} ranks," \\
  "CPUs per node ${{SLURM_JOB_CPUS_PER_NODE:-unknown}}"
{launch}
"""


def run_command(cmd, timeout=60):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


def job_state(job_id):
    """The job's state word (PENDING, RUNNING, COMPLETED, FAILED, ...) and exit code text."""
    r = run_command(["squeue", "-h", "-j", job_id, "-o", "%T %r"])
    if r.returncode == 0 and r.stdout.strip():
        state, _, reason = r.stdout.strip().partition(" ")
        return state, f"reason {reason}"
    r = run_command(["scontrol", "-o", "show", "job", job_id])
    if r.returncode == 0 and "JobState=" in r.stdout:
        fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
        return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "")
    r = run_command(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"])
    if r.returncode == 0 and r.stdout.strip():
        state, _, code = r.stdout.splitlines()[0].partition("|")
        return state.split()[0], code
    return "UNKNOWN", ""


FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def job_launch(spec, args, run):
    """The command the job script starts the run's ranks with."""
    ranks, nodes = run["ranks"], run["nodes"]
    if args.launcher == "srun":
        launch = ["srun", f"--mpi={args.srun_mpi}", f"--nodes={nodes}", f"--ntasks={ranks}"]
        # Slurm refuses --ntasks-per-node above a node's CPUs even with --overcommit.
        launch.append("--overcommit" if args.overcommit else f"--ntasks-per-node={ranks // nodes}")
    else:
        launch = shlex.split(args.mpirun) + ["-np", str(ranks)]
        if os.geteuid() == 0:
            launch.append("--allow-run-as-root")
        launch += ["--map-by", f"ppr:{ranks // nodes}:node"]
        if args.overcommit:
            launch.append("--oversubscribe")
        launch += shlex.split(args.mpirun_args)
    return launch + trainer_command(spec, args, run)


def submit_runs(spec, args, runs):
    """One job per run, each depending on the one before (afterany)."""
    minutes = max(1, -(-args.timeout // 60))
    previous = None
    for run in runs:
        ranks, nodes = run["ranks"], run["nodes"]
        launch = job_launch(spec, args, run)
        begin_run(run)
        script = os.path.join(run["dir"], "job.sbatch")
        with open(script, "w") as f:
            f.write(JOB_SCRIPT.format(job_name=f"{spec['name']}-{run['name']}", nodes=nodes,
                                      ranks=ranks, minutes=minutes,
                                      log=run["log"], source_dir=shlex.quote(SOURCE_DIR),
                                      name=run["name"], launch=shlex.join(launch),
                                      extra=("#SBATCH --overcommit\n" if args.overcommit
                                             else f"#SBATCH --ntasks-per-node={ranks // nodes}\n")))
        cmd = ["sbatch", "--parsable"] + shlex.split(args.sbatch_args)
        if previous:
            cmd.append(f"--dependency=afterany:{previous}")
        cmd.append(script)
        run["command"] = shlex.join(cmd)
        r = run_command(cmd)
        if r.returncode != 0:
            submitted = [p["job"] for p in runs if "job" in p]
            if submitted:
                run_command(["scancel"] + submitted)
            raise RuntimeError(f"sbatch failed for point {run_title(run)} ({run['command']}): "
                               f"{r.stderr.strip() or r.stdout.strip()}")
        run["job"] = r.stdout.strip().split(";")[0]
        save_record(run)
        previous = run["job"]
        print(f"scaling_study: [{run_title(run)}] job {run['job']}: {shlex.join(launch)}",
              flush=True)


def job_ended(run, state, code):
    """Collects a run whose job ended in state."""
    run["state"] = state
    if state != "COMPLETED":
        run["error"] = f"job {run['job']} ended {state} (exit code {code or '?'})"
    else:
        study_folder.read_summary(run)
    run["cores"] = run_cores(run["dir"], None)
    end_run(run)
    if "error" in run:
        report_failure(run, run["error"])


def cancel_pending(pending, why):
    run_command(["scancel"] + [p["job"] for p in pending])
    for p in pending:
        p["error"] = why(p)
        end_run(p)
    pending.clear()


def run_sbatch(spec, args, runs):
    submit_runs(spec, args, runs)
    deadline = time.monotonic() + args.timeout * len(runs)
    pending = list(runs)
    while pending:
        for run in list(pending):
            state, code = job_state(run["job"])
            if state not in FINISHED:
                run["last_state"] = f"{state} ({code})" if code else state
                continue
            pending.remove(run)
            job_ended(run, state, code)
            if "error" in run and args.stop_on_failure and pending:
                cancel_pending(pending, lambda p, failed=run: (
                    f"cancelled (job {p['job']}) after {run_title(failed)} failed"))
        if not pending:
            break
        if time.monotonic() > deadline:
            late = list(pending)
            cancel_pending(pending, lambda p: (
                f"job {p['job']} not finished within the timeout (last state "
                f"{p.get('last_state', 'unknown')}); cancelled"))
            for p in late:
                report_failure(p, p["error"])
            break
        time.sleep(args.poll)


def check_earlier_jobs(runs):
    """FolderError when a job of an earlier, interrupted study run is still queued or running:
    a new run of its point beside it would compete for the nodes."""
    if not shutil.which("squeue"):
        return
    for run in runs:
        record = run["record"] or {}
        if not record.get("job") or record.get("status"):
            continue
        state, _ = job_state(record["job"])
        if state not in FINISHED and state != "UNKNOWN":
            raise FolderError(f"job {record['job']} of point {run_title(run)} ({run['dir']}), "
                              f"started by an earlier run of this study, is still {state}: "
                              f"wait for it to end (or scancel {record['job']}), then rerun")


# ---- the study ------------------------------------------------------------------------------


def folder_kind(out_dir):
    """'real' when OUT holds run folders, 'simulated' when it holds only a --simulate table,
    else None (empty or new)."""
    if os.path.isdir(os.path.join(out_dir, "points")):
        return "real"
    try:
        with open(os.path.join(out_dir, "results.csv")) as f:
            return "simulated" if ",SIMULATED," in f.read() else None
    except OSError:
        return None


def plan_study(spec, args, out_dir, settings, threads):
    """The runs to start (dicts), after the checks of the folder's earlier runs; prints a line
    per point whose finished runs are kept. Raises FolderError."""
    if folder_kind(out_dir) == "simulated":
        raise FolderError(f"{out_dir} holds a simulated study (--simulate): give another --out")
    earlier = study_folder.scan_runs(out_dir)
    study_folder.check_settings(earlier, settings, out_dir)
    check_earlier_jobs(earlier)
    for run in earlier:
        if run["record"] is None and os.path.exists(os.path.join(run["dir"], "summary.json")):
            print(f"scaling_study: note: {os.path.relpath(run['dir'], out_dir)} has no "
                  f"{study_folder.RECORD} (an older scaling_study.py made it): its settings are "
                  "taken to be this study's", flush=True)
    points = [{"name": point_name(r, n, s, t), "ranks": r, "nodes": n, "stages": s, "ways": t,
               "settings": settings, "threads": threads} for r, n, s, t in spec["points"]]
    kept, runs = study_folder.plan_runs(points, earlier, args.repeat, out_dir)
    for line in kept:
        print(f"scaling_study: {line}", flush=True)
    return runs


def table_points(out_dir):
    """Every point with a finished run in the folder, with its cores and oversubscription."""
    points = study_folder.finished_points(out_dir)
    for p in points:
        known = [c for c in (run_cores(d, r) for d, r in zip(p["dirs"], p["records"])) if c]
        threads = max((r or {}).get("threads", 1) for r in p["records"])
        p["cores"] = min(known) if known else None
        p["oversubscribed"] = oversubscription(p["ranks"], p["nodes"], threads, p["cores"])
    return points


def write_report(out_dir, spec, runs, repeat):
    """results.md, results.csv, study.json and scaling.png from every finished run in the
    folder; an existing table is never replaced by an empty one. Returns the rows."""
    points = table_points(out_dir)
    grids = list(spec["grids"]) + sorted({(p["stages"], p["ways"]) for p in points}
                                         - set(spec["grids"]))
    rows = compute_rows(points, grids)
    md = os.path.join(out_dir, "results.md")
    if not rows and os.path.exists(md):
        print(f"scaling_study: no point has a finished run; {md}, results.csv and scaling.png "
              "left as they were", file=sys.stderr)
        return rows
    planned = {point_name(*q) for q in spec["points"]}
    for p in points:
        if p["name"] not in planned:
            print(f"scaling_study: the table also holds point {p['name']} (finished before, "
                  "not one of this run's points)", flush=True)
    write_csv(os.path.join(out_dir, "results.csv"), rows)
    write_markdown(md, spec, rows, runs)
    json_rows = [{k: (None if v != v else v) for k, v in r.items()} for r in rows]  # NaN
    shown = [{k: v for k, v in r.items() if k != "record"} for r in runs]
    write_atomic(os.path.join(out_dir, "study.json"),
                 json.dumps({"spec": spec, "repeat": repeat, "runs": shown, "rows": json_rows},
                            indent=1) + "\n")
    png = write_plot(out_dir, spec, rows) if rows else None
    with open(md, encoding="utf-8") as f:
        sys.stdout.write(f.read())
    print(f"scaling_study: wrote {out_dir}/results.md, results.csv"
          + (f", {os.path.basename(png)}" if png else ""))
    return rows


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("spec", help="study spec (INI with a [study] section)")
    ap.add_argument("--mode", choices=["mpirun", "sbatch"],
                    help="how to run the points (required unless --simulate)")
    ap.add_argument("--simulate", metavar="PLATFORM", help="simulate the points on a SimGrid "
                    "platform of sim/platforms/ instead (slurm/simulate_study.py)")
    ap.add_argument("--summary", help="with --simulate: a real run's summary.json (step times)")
    ap.add_argument("--out", required=True, help="output folder (created; a folder holding an "
                    "earlier run of the study resumes it: finished runs are kept)")
    ap.add_argument("--repeat", default="1", metavar="N", help="runs per point (default 1); "
                    "the table shows the median and min-max, results.csv every run")
    ap.add_argument("--trainer", help="trainer program (overrides the spec's trainer)")
    ap.add_argument("--ranks", help="rank counts, e.g. 1,2,4 (replaces the spec's ranks)")
    ap.add_argument("--nodes", help="node counts: one, or one per rank count (replaces the spec's)")
    ap.add_argument("--grids", help="grids SxT, e.g. 1x1,2x1,2x2: S pipeline stages x T tensor "
                    "ways (replaces the spec's grids; default 1x1)")
    ap.add_argument("--scaling", choices=["weak", "strong"], help="replaces the spec's scaling")
    ap.add_argument("--batch", help="per-replica (weak) or global (strong) batch (replaces the "
                    "spec's)")
    ap.add_argument("--config", help="training config (replaces the spec's config)")
    ap.add_argument("--overrides", help="flags for every run, one string (replaces the spec's)")
    ap.add_argument("--mpirun", default="mpirun", help="mpirun command (default: mpirun)")
    ap.add_argument("--mpirun-args", default="", help="extra mpirun flags, one string")
    ap.add_argument("--sbatch-args", default="", help="extra sbatch flags, one string")
    ap.add_argument("--launcher", choices=["srun", "mpirun"], default="srun",
                    help="how a job starts its ranks in --mode sbatch (default srun)")
    ap.add_argument("--srun-mpi", default="pmix", help="srun --mpi plugin (default pmix)")
    ap.add_argument("--overcommit", action="store_true",
                    help="--mode sbatch: allow more ranks than a node's CPUs (sbatch/srun "
                    "--overcommit); otherwise such a point waits for resources until --timeout")
    ap.add_argument("--launch-args", default="", help="flags for slurm/launch.sh, e.g. --check")
    ap.add_argument("--no-launch-wrapper", action="store_true",
                    help="run the trainer without slurm/launch.sh")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run (default 1800)")
    ap.add_argument("--poll", type=float, default=2.0, help="sbatch polling interval, seconds")
    ap.add_argument("--stop-on-failure", action="store_true",
                    help="stop at the first failed run (default: go on)")
    return ap.parse_args(argv)


def check_arguments(args, spec):
    """'' when the arguments can run a study, else the error (one line). Sets args.repeat."""
    if not re.fullmatch(r"\d+", args.repeat.strip()) or int(args.repeat) < 1:
        return f"--repeat {args.repeat!r}: expected an integer >= 1 (runs per point)"
    args.repeat = int(args.repeat)
    if args.simulate:
        return ""
    if not args.mode:
        return "--mode mpirun|sbatch is required (or --simulate)"
    trainer = resolve(args.trainer or spec["trainer"])
    if not os.access(trainer, os.X_OK):
        return f"trainer {trainer} is not an executable file"
    if args.mode == "sbatch" and not shutil.which("sbatch"):
        return "--mode sbatch but sbatch is not on PATH"
    return ""


def simulate(spec, args, out_dir):
    import scaling_report
    import simulate_study
    if folder_kind(out_dir) == "real":
        print(f"scaling_study: error: {out_dir} holds a real study's runs (points/): simulate "
              "into another --out", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    try:
        return simulate_study.run_simulated_study(spec, args, scaling_report, out_dir)
    except (simulate_study.SimError, OSError, ValueError) as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return 2


def run_study(spec, args, runs):
    """Runs the planned runs; '' or the error that stopped them (mpirun or sbatch failing)."""
    try:
        if args.mode == "mpirun":
            cores = mpirun_cores()
            for p in {r["name"]: r for r in runs}.values():
                over = oversubscription(p["ranks"], p["nodes"], p["threads"], cores)
                if over:
                    print(f"scaling_study: note: point {p['name']} is {over}: its efficiency "
                          "will measure ranks taking turns, not scaling", flush=True)
            run_mpirun(spec, args, runs, cores)
        else:
            run_sbatch(spec, args, runs)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return str(e)
    return ""


def main(argv):
    args = parse_args(argv)
    try:
        spec = load_spec(args.spec, {key: getattr(args, key) for key in AXES})
    except SpecError as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return 2
    problem = check_arguments(args, spec)
    if problem:
        print(f"scaling_study: error: {problem}", file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out)
    if args.simulate:
        return simulate(spec, args, out_dir)
    settings = study_folder.study_settings(spec, resolve(args.trainer or spec["trainer"]),
                                           resolve(spec["config"]))
    try:
        runs = plan_study(spec, args, out_dir, settings, threads_per_rank(spec, args))
    except (FolderError, OSError) as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(out_dir, "points"), exist_ok=True)
    for line in spec["skipped"]:
        print(f"scaling_study: skipping point {line}", flush=True)
    try:
        stopped = run_study(spec, args, runs)
    except KeyboardInterrupt:
        print("\nscaling_study: interrupted; the finished runs are kept: the same command "
              "resumes the study", file=sys.stderr)
        return 130
    for run in runs:
        if "summary" not in run and "error" not in run:
            run["error"] = (f"not run (the study stopped: {stopped})" if stopped else
                            "not run (an earlier point failed and --stop-on-failure is set)")
        if run.get("record") and "status" not in run["record"]:
            end_run(run)  # submitted, then cancelled when a later sbatch failed
    write_report(out_dir, spec, runs, args.repeat)
    failed = [run_title(r) for r in runs if "error" in r]
    if failed:
        print(f"scaling_study: {len(failed)} of {len(runs)} runs failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
