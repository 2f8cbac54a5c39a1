#!/usr/bin/python3
"""Run a scaling study of shardflow-train and report speed-up and efficiency.

    slurm/scaling_study.py SPEC.ini --mode mpirun|sbatch --out DIR [options]

--ranks 1,2 (and --nodes, --scaling, --batch, --config, --overrides) replace the spec's
[study] values for this run, so a study on fewer ranks needs no copy of the spec.

SPEC.ini (see configs/studies/):

    [study]
    config    = configs/fmnist_mlp.ini     # the training config every point runs
    ranks     = 1,2,4                      # total rank counts, one run each
    nodes     = 1                          # node counts: one value for every point, or one per rank count
    scaling   = weak                       # weak: fixed per-rank batch; strong: fixed global batch
    batch     = 64                         # the per-rank (weak) or global (strong) batch
    overrides = --train.max_steps=200      # extra flags for every run
    trainer   = build/bin/shardflow-train  # optional

Each point runs `TRAINER --config CONFIG --output DIR/points/rR_nN --train.batch_size=B
--train.batch_semantics=per_rank|global OVERRIDES` through slurm/launch.sh, either
  --mode mpirun  with mpirun on this machine or inside an allocation (--oversubscribe when the
                 ranks outnumber the cores; --mpirun-args="..." passes flags through; --mpirun replaces
                 the mpirun command, e.g. with tests/slurm/netns_cluster.sh mpirun CLUSTERDIR), or
  --mode sbatch  one sbatch job per point, chained with --dependency=afterany so they run one
                 after another; the driver polls squeue/scontrol/sacct until all end (--timeout
                 per point) and collects every output. --sbatch-args="..." passes flags
                 through (--launcher mpirun: mpirun instead of srun --mpi=pmix in the jobs).
Then it reads every point's summary.json and writes DIR/results.md, DIR/results.csv and
DIR/scaling.png (speed-up and efficiency against ranks, with the ideal line; needs gnuplot).

A failed point prints its log tail; the study goes on unless --stop-on-failure. A point that
exits 0 without a summary.json is an error naming the point. Exit status: 0 every point
succeeded, 1 some failed (the table holds the others), 2 bad spec or arguments.
Standard library only.
"""

import argparse
import configparser
import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

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


# [study] keys that the command line may set (--ranks 1,2 ...), replacing the spec's value.
AXES = ("config", "ranks", "nodes", "scaling", "batch", "overrides")


def load_spec(path, replace=None):
    """Returns a dict: config, points [(ranks, nodes)], scaling, batch, overrides, trainer, name.
    `replace` maps [study] keys to values given on the command line; they win over the file."""
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
    known = {"name", "config", "ranks", "nodes", "scaling", "batch", "overrides", "trainer"}
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
    scaling = s["scaling"].strip()
    if scaling not in ("weak", "strong"):
        raise SpecError(f"{path}: [study] scaling = '{scaling}': expected weak or strong")
    try:
        batch = int(s["batch"])
    except ValueError:
        batch = 0
    if batch < 1:
        raise SpecError(f"{path}: [study] batch = '{s['batch']}': expected an integer >= 1")
    if scaling == "strong":
        for r in ranks:
            if batch % r:
                print(f"scaling_study: warning: global batch {batch} does not divide by {r} ranks; "
                      "the trainer decides how to split it", file=sys.stderr)
    return {
        "name": s.get("name", os.path.splitext(os.path.basename(path))[0]),
        "config": s["config"].strip(),
        "points": list(zip(ranks, nodes)),
        "scaling": scaling,
        "batch": batch,
        "overrides": shlex.split(s.get("overrides", "")),
        "trainer": s.get("trainer", "build/bin/shardflow-train").strip(),
    }


def resolve(path):
    return path if os.path.isabs(path) else os.path.join(SOURCE_DIR, path)


def point_name(ranks, nodes):
    return f"r{ranks}_n{nodes}"


def trainer_command(spec, args, run_dir):
    semantics = "per_rank" if spec["scaling"] == "weak" else "global"
    cmd = [resolve(args.trainer or spec["trainer"]), "--config", resolve(spec["config"]),
           "--output", run_dir, f"--train.batch_size={spec['batch']}",
           f"--train.batch_semantics={semantics}"] + spec["overrides"]
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
    sys.stderr.write(f"scaling_study: point {point['name']} ({point['ranks']} ranks, "
                     f"{point['nodes']} nodes) failed: {why}\n"
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
        point["summary"] = summary
    except (OSError, ValueError) as e:
        point["error"] = f"run {point['name']}: bad summary.json ({path}): {e}"


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
        cmd += shlex.split(args.mpirun_args) + trainer_command(spec, args, point["dir"])
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
        launch += trainer_command(spec, args, point["dir"])
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


# ---- reporting ------------------------------------------------------------------------------


def compute_rows(points):
    ok = [p for p in points if "summary" in p]
    if not ok:
        return []
    base = min(ok, key=lambda p: p["ranks"])
    base_rate = base["summary"]["samples_per_s"]
    rows = []
    for p in sorted(ok, key=lambda p: (p["ranks"], p["nodes"])):
        s = p["summary"]
        speedup = s["samples_per_s"] / base_rate if base_rate > 0 else 0.0
        ideal = p["ranks"] / base["ranks"]
        step_ms = 1000.0 * s["wall_s"] / s["steps"] if s["steps"] else 0.0
        metric = ""
        if s.get("test_accuracy") is not None:
            metric = f"acc {s['test_accuracy']:.4f}"
        elif s.get("test_loss") is not None:
            metric = f"loss {s['test_loss']:.4f}"
        rows.append({
            "ranks": p["ranks"], "nodes": p["nodes"],
            "per_rank_batch": s.get("per_rank_batch", ""), "global_batch": s.get("global_batch", ""),
            "steps": s["steps"], "samples_per_s": s["samples_per_s"],
            "speedup": speedup, "ideal": ideal, "efficiency": speedup / ideal,
            "step_ms": step_ms,
            "input_ms": step_ms * s.get("input_wait_fraction", 0.0),
            "compute_ms": step_ms * s.get("compute_fraction", 0.0),
            "comm_ms": step_ms * s.get("comm_fraction", 0.0),
            "test": metric, "verdict": s.get("verdict", ""),
        })
    return rows


CSV_FIELDS = ["ranks", "nodes", "per_rank_batch", "global_batch", "steps", "samples_per_s",
              "speedup", "ideal", "efficiency", "step_ms", "input_ms", "compute_ms", "comm_ms",
              "test", "verdict"]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})


def write_markdown(path, spec, rows, points):
    batch_kind = "per-rank" if spec["scaling"] == "weak" else "global"
    lines = [f"# Scaling study {spec['name']}", "",
             f"{spec['scaling']} scaling of `{spec['config']}`, {batch_kind} batch {spec['batch']}, "
             f"overrides `{shlex.join(spec['overrides'])}`.",
             "Speed-up = samples/s over the smallest run's samples/s; efficiency = speed-up / "
             "(ranks / smallest ranks). Step time split by the trainer's measured fractions.", "",
             "| ranks | nodes | per-rank batch | global batch | samples/s | speed-up | efficiency "
             "| step ms | input ms | compute ms | comm ms | test | verdict |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['ranks']} | {r['nodes']} | {r['per_rank_batch']} | {r['global_batch']} "
                     f"| {r['samples_per_s']:.1f} | {r['speedup']:.2f} | {r['efficiency'] * 100:.0f}% "
                     f"| {r['step_ms']:.2f} | {r['input_ms']:.2f} | {r['compute_ms']:.2f} "
                     f"| {r['comm_ms']:.2f} | {r['test']} | {r['verdict']} |")
    failed = [p for p in points if "error" in p]
    if failed:
        lines += ["", "Failed points:", ""]
        lines += [f"- {p['name']} ({p['ranks']} ranks, {p['nodes']} nodes): {p['error']}; log "
                  f"`{p['log']}`" for p in failed]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(out_dir, spec, rows):
    """Returns the PNG path, or None (with a warning) when gnuplot is missing or fails."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("scaling_study: warning: gnuplot not found; no plot", file=sys.stderr)
        return None
    data = os.path.join(out_dir, "scaling.dat")
    with open(data, "w") as f:
        f.write("# ranks speedup ideal efficiency\n")
        for r in rows:
            f.write(f"{r['ranks']} {r['speedup']:.6f} {r['ideal']:.6f} {r['efficiency']:.6f}\n")
    png = os.path.join(out_dir, "scaling.png")
    max_ranks = max(r["ranks"] for r in rows)
    title = f"{spec['name']}: {spec['scaling']} scaling".replace("'", "''")
    script = f"""
set terminal pngcairo noenhanced size 900,420 font ",10"
set output '{png}'
set multiplot layout 1,2 title '{title}'
set xlabel 'ranks'
set grid
set key top left
set xrange [0.8:{max_ranks * 1.1}]
set logscale x 2
set ylabel 'speed-up (samples/s over smallest run)'
set yrange [0:*]
plot '{data}' using 1:3 with lines dashtype 2 lw 2 lc rgb '#888888' title 'ideal', \\
     '{data}' using 1:2 with linespoints pt 7 lw 2 lc rgb '#1f77b4' title 'measured'
set ylabel 'efficiency (speed-up / ideal)'
set yrange [0:1.2]
set key bottom left
plot 1 with lines dashtype 2 lw 2 lc rgb '#888888' title 'ideal', \\
     '{data}' using 1:4 with linespoints pt 7 lw 2 lc rgb '#d62728' title 'measured'
unset multiplot
"""
    r = subprocess.run([gnuplot], input=script, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0 or not os.path.exists(png):
        print(f"scaling_study: warning: gnuplot failed: {r.stderr.strip()}", file=sys.stderr)
        return None
    return png


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("spec", help="study spec (INI with a [study] section)")
    ap.add_argument("--mode", choices=["mpirun", "sbatch"], required=True)
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--trainer", help="trainer program (overrides the spec's trainer)")
    ap.add_argument("--ranks", help="rank counts, e.g. 1,2,4 (replaces the spec's ranks)")
    ap.add_argument("--nodes", help="node counts: one, or one per rank count (replaces the spec's)")
    ap.add_argument("--scaling", choices=["weak", "strong"], help="replaces the spec's scaling")
    ap.add_argument("--batch", help="per-rank (weak) or global (strong) batch (replaces the spec's)")
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
    points = []
    for ranks, nodes in spec["points"]:
        name = point_name(ranks, nodes)
        run_dir = os.path.join(out_dir, "points", name)
        os.makedirs(run_dir, exist_ok=True)
        stale = os.path.join(run_dir, "summary.json")
        if os.path.exists(stale):
            os.remove(stale)
        points.append({"name": name, "ranks": ranks, "nodes": nodes, "dir": run_dir,
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

    rows = compute_rows(points)
    write_csv(os.path.join(out_dir, "results.csv"), rows)
    write_markdown(os.path.join(out_dir, "results.md"), spec, rows, points)
    with open(os.path.join(out_dir, "study.json"), "w") as f:
        json.dump({"spec": spec, "points": points, "rows": rows}, f, indent=1)
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
