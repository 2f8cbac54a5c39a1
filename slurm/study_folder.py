"""The output folder of slurm/scaling_study.py, which a rerun resumes. Standard library only.

    OUT/points/NAME/         the first run of point NAME (rR_nN, or rR_nN_gSxT off grid 1x1)
    OUT/points/NAME_runK/    its K-th run (K >= 2): a repeat (--repeat), or a retry of a failed run
    OUT/points/*/point.json  what ran there: the point, the study's settings, the command, the
                             outcome and the cores the launcher had

A run is finished when its summary.json is there and valid and its point.json records no failure.
A rerun keeps every finished run and starts only the missing ones, each in a folder of its own, so
no run ever writes into another's folder; nothing under OUT is deleted. A folder's runs belong to
one study: a run made with other settings (trainer, config and its contents, scaling, batch,
overrides) is refused rather than mixed in."""

import hashlib
import json
import os
import re
import shlex

from scaling_report import grid_text, plural, write_atomic

RUN_DIR_RE = re.compile(r"r(\d+)_n(\d+)(?:_g(\d+)x(\d+))?(?:_run(\d+))?")
RECORD = "point.json"


class FolderError(Exception):
    pass


def point_name(ranks, nodes, stages=1, ways=1):
    base = f"r{ranks}_n{nodes}"
    return base if (stages, ways) == (1, 1) else f"{base}_g{stages}x{ways}"


def run_dir_name(name, number):
    return name if number == 1 else f"{name}_run{number}"


def read_json(path):
    """The JSON object in path, or None when it is missing or unreadable."""
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def write_json_atomic(path, data):
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def file_sha256(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""


def study_settings(spec, trainer, config):
    """What makes two runs of a point the same measurement (the launch flags may differ)."""
    return {"trainer": trainer, "config": config, "config_sha256": file_sha256(config),
            "scaling": spec["scaling"], "batch": spec["batch"], "overrides": spec["overrides"]}


def shown(value):
    """A setting as the command line gives it: a list of flags joined, the rest quoted."""
    if isinstance(value, list):
        return repr(shlex.join(value))
    return repr(value)


def settings_difference(then, now):
    """'' when the settings match, else the first difference as text."""
    for key in now:
        if then.get(key) != now[key]:
            if key == "config_sha256":
                return f"the contents of {now['config']} changed since"
            return f"{key} {shown(then.get(key))} then, {shown(now[key])} now"
    return ""


def scan_runs(out_dir):
    """Every run folder under OUT/points, as dicts (name, run, ranks, nodes, stages, ways, dir,
    log, record: its point.json or None), sorted by name and run number."""
    top = os.path.join(out_dir, "points")
    try:
        entries = os.listdir(top)
    except FileNotFoundError:
        return []
    runs = []
    for entry in entries:
        m = RUN_DIR_RE.fullmatch(entry)
        path = os.path.join(top, entry)
        if not m or not os.path.isdir(path):
            continue
        ranks, nodes, stages, ways, number = (int(g) if g else None for g in m.groups())
        name = point_name(ranks, nodes, stages or 1, ways or 1)
        if run_dir_name(name, number or 1) != entry:  # r2_n1_g1x1, r2_n1_run1: not ours
            continue
        runs.append({"name": name, "run": number or 1, "ranks": ranks, "nodes": nodes,
                     "stages": stages or 1, "ways": ways or 1, "dir": path,
                     "log": os.path.join(path, "run.log"),
                     "record": read_json(os.path.join(path, RECORD))})
    return sorted(runs, key=lambda r: (r["name"], r["run"]))


GRID_RE = re.compile(r"(\d+) replicas? x (\d+) stages? x (\d+) tensor ways?\b")


def summary_grid(summary):
    """(replicas, stages, ways) from summary.json's "grid" text, or None when it has none."""
    m = GRID_RE.match(summary.get("grid", ""))
    return tuple(int(g) for g in m.groups()) if m else None


def read_summary(run):
    """Sets run['summary'] or run['error'] from the run folder's summary.json."""
    path = os.path.join(run["dir"], "summary.json")
    if not os.path.exists(path):
        run["error"] = f"run {run['name']} wrote no summary.json ({path})"
        return
    try:
        with open(path) as f:
            summary = json.load(f)
        for key in ("ranks", "samples_per_s", "steps", "wall_s"):
            if key not in summary:
                raise ValueError(f"no '{key}'")
    except (OSError, ValueError) as e:
        run["error"] = f"run {run['name']}: bad summary.json ({path}): {e}"
        return
    ran = summary_grid(summary)
    wanted = (run["ranks"] // (run["stages"] * run["ways"]), run["stages"], run["ways"])
    if (ran or (run["ranks"], 1, 1)) != wanted:
        ran_text = summary.get("grid") or "none: data-parallel"
        run["error"] = (f"run {run['name']} ran the grid '{ran_text}', not "
                        f"{plural(wanted[0], 'replica', 'replicas')} x "
                        f"{grid_text(wanted[1], wanted[2])} ({path})")
        return
    run["summary"] = summary


def finished(run):
    """True when the run on disk finished: a valid summary.json and no failure recorded."""
    status = (run["record"] or {}).get("status", "")
    if status.startswith("failed"):
        return False
    read_summary(run)
    return "summary" in run


def check_settings(runs, settings, out_dir):
    """Raises FolderError when a run in the folder was made with other settings."""
    for run in runs:
        then = (run["record"] or {}).get("settings")
        if then is None:
            continue
        diff = settings_difference(then, settings)
        if diff:
            raise FolderError(
                f"{os.path.relpath(run['dir'], out_dir)} in {out_dir} was run with other "
                f"settings ({diff}); rerun with its settings to resume that study, or give a new "
                "--out folder")


def plan_runs(points, runs, repeat, out_dir):
    """The runs to start so that every point has `repeat` finished runs, round-robin over the
    points (repeat 1 of every point first), each numbered after the point's highest folder; and
    one line per point that needs no new run."""
    done = {}
    highest = {}
    for run in runs:
        highest[run["name"]] = max(highest.get(run["name"], 0), run["run"])
        if finished(run):
            done.setdefault(run["name"], []).append(run)
    lines, need = [], {}
    for p in points:
        kept = done.get(p["name"], [])
        need[p["name"]] = max(0, repeat - len(kept))
        if kept:
            where = ", ".join(os.path.relpath(r["dir"], out_dir) for r in kept)
            rest = (f"; {plural(need[p['name']], 'more run', 'more runs')} to go"
                    if need[p["name"]] else "; not run again")
            lines.append(f"keeping point {p['name']}: "
                         f"{plural(len(kept), 'finished run', 'finished runs')} from before "
                         f"({where}){rest}")
    new = []
    for i in range(max(need.values(), default=0)):
        for p in points:
            if need[p["name"]] > i:
                highest[p["name"]] = highest.get(p["name"], 0) + 1
                number = highest[p["name"]]
                folder = os.path.join(out_dir, "points", run_dir_name(p["name"], number))
                new.append(dict(p, run=number, dir=folder, log=os.path.join(folder, "run.log"),
                                record=None))
    return lines, new


def finished_points(out_dir):
    """Every point with a finished run in the folder, as dicts with "summaries" (run order),
    "records" (their point.json or None) and "dirs": what the table is made of."""
    points = {}
    for run in scan_runs(out_dir):
        if not finished(run):
            continue
        p = points.setdefault(run["name"], {k: run[k] for k in ("name", "ranks", "nodes", "stages",
                                                                 "ways")})
        p.setdefault("summaries", []).append(run["summary"])
        p.setdefault("records", []).append(run["record"])
        p.setdefault("dirs", []).append(run["dir"])
    return list(points.values())
