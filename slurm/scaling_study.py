#!/usr/bin/python3
"""Run a scaling study of shardflow-train and report speed-up and efficiency.

    slurm/scaling_study.py SPEC.ini --mode mpirun|sbatch --out DIR [options]

--ranks 1,2 (and --nodes, --grids, --scaling, --batch, --config, --overrides) replace the
spec's [study] values for this run, so a study on fewer ranks needs no copy of the spec.

SPEC.ini (see configs/studies/):

    [study]
    config    = configs/fmnist_mlp.ini     # the training config every point runs
    ranks     = 1,2,4                      # total rank counts, one run each
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
the D replicas). Each point runs `TRAINER --config CONFIG --output DIR/points/NAME
--train.batch_size=B --train.batch_semantics=per_rank|global --dist.pipeline_stages=S
--dist.tensor_parallel=T OVERRIDES` (NAME is rR_nN on grid 1x1, rR_nN_gSxT otherwise; the
overrides may not set the grid) through slurm/launch.sh, either
  --mode mpirun  with mpirun on this machine or inside an allocation (--oversubscribe when the
                 ranks outnumber the cores; --mpirun-args="..." passes flags through; --mpirun replaces
                 the mpirun command, e.g. with tests/slurm/netns_cluster.sh mpirun CLUSTERDIR), or
  --mode sbatch  one sbatch job per point, chained with --dependency=afterany so they run one
                 after another; the driver polls squeue/scontrol/sacct until all end (--timeout
                 per point) and collects every output. --sbatch-args="..." passes flags
                 through (--launcher mpirun: mpirun instead of srun --mpi=pmix in the jobs).
Then it reads every point's summary.json and writes DIR/results.md, DIR/results.csv and
DIR/scaling.png (speed-up and efficiency against ranks, with the ideal line; needs gnuplot).
Speed-up and efficiency are per grid: over the samples/s of the same grid's smallest rank count.

--simulate PLATFORM --summary RUN/summary.json runs no trainer: the weak-scaling, data-parallel
points are replayed on a SimGrid platform of sim/platforms/ with RUN's step times
(slurm/simulate_study.py, docs/simulation.md) and the same table is written, marked SIMULATED.

A failed point prints its log tail; the study goes on unless --stop-on-failure. A point that
exits 0 without a summary.json is an error naming the point. Exit status: 0 every point
succeeded, 1 some failed (the table holds the others), 2 bad spec or arguments.
Standard library only.
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

sys.dont_write_bytecode = True  # no __pycache__ in the checkout for the import below
from scaling_report import compute_rows, grid_text, plural, point_label, write_csv, \
    write_markdown, write_plot  # noqa: E402

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


def point_name(ranks, nodes, stages=1, ways=1):
    base = f"r{ranks}_n{nodes}"
    return base if (stages, ways) == (1, 1) else f"{base}_g{stages}x{ways}"


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


def trainer_command(spec, args, point):
    semantics = "per_rank" if spec["scaling"] == "weak" else "global"
    cmd = [resolve(args.trainer or spec["trainer"]), "--config", resolve(spec["config"]),
           "--output", point["dir"], f"--train.batch_size={spec['batch']}",
           f"--train.batch_semantics={semantics}", f"--dist.pipeline_stages={point['stages']}",
           f"--dist.tensor_parallel={point['ways']}"] + spec["overrides"]
    if args.no_launch_wrapper:
        return cmd
    return [LAUNCH] + shlex.split(args.launch_args) + ["--"] + cmd


def log_tail(path, lines=TAIL_LINES):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})\n"


def report_failure(point, why):
    sys.stderr.write(f"scaling_study: point {point['name']} ({point_label(point)}) failed: {why}\n"
                     f"--- last {TAIL_LINES} lines of {point['log']} ---\n{log_tail(point['log'])}"
                     f"--- end of {point['log']} ---\n")


def read_summary(point):
    """Sets point['summary'] or point['error']."""
    path = os.path.join(point["dir"], "summary.json")
    if not os.path.exists(path):
        point["error"] = f"run {point['name']} wrote no summary.json ({path})"
        return
    try:
        with open(path) as f:
            summary = json.load(f)
        for key in ("ranks", "samples_per_s", "steps", "wall_s"):
            if key not in summary:
                raise ValueError(f"no '{key}'")
    except (OSError, ValueError) as e:
        point["error"] = f"run {point['name']}: bad summary.json ({path}): {e}"
        return
    ran = summary_grid(summary)
    wanted = (point["ranks"] // (point["stages"] * point["ways"]), point["stages"], point["ways"])
    if (ran or (point["ranks"], 1, 1)) != wanted:
        ran_text = summary.get("grid") or "none: data-parallel"
        point["error"] = (f"run {point['name']} ran the grid '{ran_text}', not "
                          f"{plural(wanted[0], 'replica', 'replicas')} x "
                          f"{grid_text(wanted[1], wanted[2])} ({path})")
        return
    point["summary"] = summary


GRID_RE = re.compile(r"(\d+) replicas? x (\d+) stages? x (\d+) tensor ways?\b")


def summary_grid(summary):
    """(replicas, stages, ways) from summary.json's "grid" text, or None when it has none."""
    m = GRID_RE.match(summary.get("grid", ""))
    return tuple(int(g) for g in m.groups()) if m else None


# ---- mpirun mode ----------------------------------------------------------------------------


def run_mpirun(spec, args, points):
    cores = os.cpu_count() or 1
    for point in points:
        ranks, nodes = point["ranks"], point["nodes"]
        cmd = shlex.split(args.mpirun) + ["-np", str(ranks)]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if nodes > 1:
            cmd += ["--map-by", f"ppr:{ranks // nodes}:node"]
        elif ranks > cores:
            cmd.append("--oversubscribe")
        cmd += shlex.split(args.mpirun_args) + trainer_command(spec, args, point)
        point["command"] = shlex.join(cmd)
        print(f"scaling_study: [{point['name']}] {point['command']}", flush=True)
        with open(point["log"], "w") as log:
            log.write(f"$ {point['command']}\n")
            log.flush()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=SOURCE_DIR,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                rc = None
        if rc is None:
            point["error"] = f"timed out after {args.timeout} s"
        elif rc != 0:
            point["error"] = f"exit status {rc}"
        else:
            read_summary(point)
        if "error" in point:
            report_failure(point, point["error"])
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
echo "scaling_study point {name}: $SLURM_JOB_NUM_NODES nodes ($SLURM_JOB_NODELIST), {ranks} ranks"
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


def run_sbatch(spec, args, points):
    minutes = max(1, -(-args.timeout // 60))
    previous = None
    for point in points:
        ranks, nodes = point["ranks"], point["nodes"]
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
        launch += trainer_command(spec, args, point)
        script = os.path.join(point["dir"], "job.sbatch")
        with open(script, "w") as f:
            f.write(JOB_SCRIPT.format(job_name=f"{spec['name']}-{point['name']}", nodes=nodes,
                                      ranks=ranks, minutes=minutes,
                                      log=point["log"], source_dir=shlex.quote(SOURCE_DIR),
                                      name=point["name"], launch=shlex.join(launch),
                                      extra=("#SBATCH --overcommit\n" if args.overcommit
                                             else f"#SBATCH --ntasks-per-node={ranks // nodes}\n")))
        cmd = ["sbatch", "--parsable"] + shlex.split(args.sbatch_args)
        if previous:
            cmd.append(f"--dependency=afterany:{previous}")
        cmd.append(script)
        point["command"] = shlex.join(cmd)
        r = run_command(cmd)
        if r.returncode != 0:
            submitted = [p["job"] for p in points if "job" in p]
            if submitted:
                run_command(["scancel"] + submitted)
            raise RuntimeError(f"sbatch failed for point {point['name']} ({point['command']}): "
                               f"{r.stderr.strip() or r.stdout.strip()}")
        point["job"] = r.stdout.strip().split(";")[0]
        previous = point["job"]
        print(f"scaling_study: [{point['name']}] job {point['job']}: {shlex.join(launch)}",
              flush=True)

    deadline = time.monotonic() + args.timeout * len(points)
    pending = list(points)
    stopped = False
    while pending:
        for point in list(pending):
            state, code = job_state(point["job"])
            if state not in FINISHED:
                point["last_state"] = f"{state} ({code})" if code else state
                continue
            pending.remove(point)
            point["state"] = state
            if state != "COMPLETED":
                point["error"] = f"job {point['job']} ended {state} (exit code {code or '?'})"
            else:
                read_summary(point)
            if "error" in point:
                report_failure(point, point["error"])
                if args.stop_on_failure and pending:
                    ids = [p["job"] for p in pending]
                    run_command(["scancel"] + ids)
                    for p in pending:
                        p["error"] = f"cancelled (job {p['job']}) after {point['name']} failed"
                    pending.clear()
                    stopped = True
        if not pending:
            break
        if time.monotonic() > deadline:
            ids = [p["job"] for p in pending]
            run_command(["scancel"] + ids)
            for p in pending:
                p["error"] = (f"job {p['job']} not finished within the timeout (last state "
                              f"{p.get('last_state', 'unknown')}); cancelled")
                report_failure(p, p["error"])
            break
        time.sleep(args.poll)
    return stopped


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("spec", help="study spec (INI with a [study] section)")
    ap.add_argument("--mode", choices=["mpirun", "sbatch"],
                    help="how to run the points (required unless --simulate)")
    ap.add_argument("--simulate", metavar="PLATFORM", help="simulate the points on a SimGrid "
                    "platform of sim/platforms/ instead (slurm/simulate_study.py)")
    ap.add_argument("--summary", help="with --simulate: a real run's summary.json (step times)")
    ap.add_argument("--out", required=True, help="output folder (created)")
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
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per point (default 1800)")
    ap.add_argument("--poll", type=float, default=2.0, help="sbatch polling interval, seconds")
    ap.add_argument("--stop-on-failure", action="store_true",
                    help="stop at the first failed point (default: go on)")
    args = ap.parse_args(argv)

    try:
        spec = load_spec(args.spec, {key: getattr(args, key) for key in AXES})
    except SpecError as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return 2
    if args.simulate:
        import scaling_report
        import simulate_study
        out_dir = os.path.abspath(args.out)
        os.makedirs(out_dir, exist_ok=True)
        try:
            return simulate_study.run_simulated_study(spec, args, scaling_report, out_dir)
        except (simulate_study.SimError, OSError, ValueError) as e:
            print(f"scaling_study: error: {e}", file=sys.stderr)
            return 2
    if not args.mode:
        print("scaling_study: error: --mode mpirun|sbatch is required (or --simulate)",
              file=sys.stderr)
        return 2
    trainer = resolve(args.trainer or spec["trainer"])
    if not os.access(trainer, os.X_OK):
        print(f"scaling_study: error: trainer {trainer} is not an executable file", file=sys.stderr)
        return 2
    if args.mode == "sbatch" and not shutil.which("sbatch"):
        print("scaling_study: error: --mode sbatch but sbatch is not on PATH", file=sys.stderr)
        return 2

    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    for stale in ("results.md", "results.csv", "scaling.png", "scaling.dat", "study.json"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    for line in spec["skipped"]:
        print(f"scaling_study: skipping point {line}", flush=True)
    points = []
    for ranks, nodes, stages, ways in spec["points"]:
        name = point_name(ranks, nodes, stages, ways)
        run_dir = os.path.join(out_dir, "points", name)
        os.makedirs(run_dir, exist_ok=True)
        stale = os.path.join(run_dir, "summary.json")
        if os.path.exists(stale):
            os.remove(stale)
        points.append({"name": name, "ranks": ranks, "nodes": nodes, "stages": stages,
                       "ways": ways, "dir": run_dir,
                       "log": os.path.join(run_dir, "run.log")})

    try:
        if args.mode == "mpirun":
            run_mpirun(spec, args, points)
        else:
            run_sbatch(spec, args, points)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"scaling_study: error: {e}", file=sys.stderr)
        return 1
    for p in points:
        if "summary" not in p and "error" not in p:
            p["error"] = "not run (an earlier point failed and --stop-on-failure is set)"

    rows = compute_rows(points, spec["grids"])
    write_csv(os.path.join(out_dir, "results.csv"), rows)
    write_markdown(os.path.join(out_dir, "results.md"), spec, rows, points)
    with open(os.path.join(out_dir, "study.json"), "w") as f:
        json_rows = [{k: (None if v != v else v) for k, v in r.items()} for r in rows]  # NaN
        json.dump({"spec": spec, "points": points, "rows": json_rows}, f, indent=1)
    png = write_plot(out_dir, spec, rows) if rows else None
    with open(os.path.join(out_dir, "results.md")) as f:
        sys.stdout.write(f.read())
    print(f"scaling_study: wrote {out_dir}/results.md, results.csv"
          + (f", {os.path.basename(png)}" if png else ""))
    failed = [p["name"] for p in points if "error" in p]
    if failed:
        print(f"scaling_study: {len(failed)} of {len(points)} points failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
