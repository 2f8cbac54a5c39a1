"""The report of slurm/scaling_study.py: one row per point (speed-up and efficiency within each
grid's series), results.csv, results.md and scaling.png. Standard library only; functions of
their arguments, no shared state."""

import csv
import os
import shlex
import shutil
import subprocess
import sys


def plural(n, one, many):
    return f"{n} {one if n == 1 else many}"


def grid_text(stages, ways):
    return f"{plural(stages, 'stage', 'stages')} x {plural(ways, 'tensor way', 'tensor ways')}"


def point_label(point):
    """'2 ranks, 1 nodes', and the grid when it is not 1x1."""
    label = f"{point['ranks']} ranks, {point['nodes']} nodes"
    if (point["stages"], point["ways"]) != (1, 1):
        label += f", {grid_text(point['stages'], point['ways'])}"
    return label


def compute_rows(points, grids):
    """One row per successful point, grid by grid (the spec's order), then by ranks. Speed-up
    and efficiency compare a point with the smallest rank count of the same grid."""
    rows = []
    for stages, ways in grids:
        ok = [p for p in points if "summary" in p and (p["stages"], p["ways"]) == (stages, ways)]
        if not ok:
            continue
        base = min(ok, key=lambda p: p["ranks"])
        base_rate = base["summary"]["samples_per_s"]
        for p in sorted(ok, key=lambda p: (p["ranks"], p["nodes"])):
            rows.append(row_of(p, base, base_rate))
    return rows


def row_of(p, base, base_rate):
    s = p["summary"]
    speedup = s["samples_per_s"] / base_rate if base_rate > 0 else 0.0
    ideal = p["ranks"] / base["ranks"]
    step_ms = 1000.0 * s["wall_s"] / s["steps"] if s["steps"] else 0.0
    metric = ""
    if s.get("test_accuracy") is not None:
        metric = f"acc {s['test_accuracy']:.4f}"
    elif s.get("test_loss") is not None:
        metric = f"loss {s['test_loss']:.4f}"
    figures = s.get("strategy_figures") or {}
    rss = s.get("peak_rss_mib") or []
    return {
        "ranks": p["ranks"], "nodes": p["nodes"],
        "per_rank_batch": s.get("per_rank_batch", ""), "global_batch": s.get("global_batch", ""),
        "steps": s["steps"], "samples_per_s": s["samples_per_s"],
        "speedup": speedup, "ideal": ideal, "efficiency": speedup / ideal,
        "step_ms": step_ms,
        "input_ms": step_ms * s.get("input_wait_fraction", 0.0),
        "compute_ms": step_ms * s.get("compute_fraction", 0.0),
        "comm_ms": step_ms * s.get("comm_fraction", 0.0),
        "test": metric, "verdict": s.get("verdict", ""),
        "stages": p["stages"], "tensor_ways": p["ways"],
        "replicas": p["ranks"] // (p["stages"] * p["ways"]),
        "bubble_fraction": float(figures.get("bubble_fraction", "nan")),
        "ideal_bubble_fraction": float(figures.get("ideal_bubble_fraction", "nan")),
        "peak_rss_mib": float(max(rss)) if rss else float("nan"),
    }


# New columns go last: readers of older results.csv files keep their column positions.
CSV_FIELDS = ["ranks", "nodes", "per_rank_batch", "global_batch", "steps", "samples_per_s",
              "speedup", "ideal", "efficiency", "step_ms", "input_ms", "compute_ms", "comm_ms",
              "test", "verdict", "stages", "tensor_ways", "replicas", "bubble_fraction",
              "ideal_bubble_fraction", "peak_rss_mib"]


def cell(value, fmt):
    """A float formatted with fmt, or blank for a figure the run did not report (NaN)."""
    if isinstance(value, float):
        return "" if value != value else format(value, fmt)
    return value


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: cell(v, ".4f") for k, v in r.items()})


def write_markdown(path, spec, rows, points):
    batch_kind = "per-replica" if spec["scaling"] == "weak" else "global"
    grids = ", ".join(f"{s}x{t}" for s, t in spec["grids"])
    lines = [f"# Scaling study {spec['name']}", "",
             f"{spec['scaling']} scaling of `{spec['config']}`, {batch_kind} batch "
             f"{spec['batch']}, grids {grids} (pipeline stages x tensor ways), overrides "
             f"`{shlex.join(spec['overrides'])}`.",
             "Speed-up = samples/s over the samples/s of the same grid's smallest run; efficiency "
             "= speed-up / (ranks / that run's ranks). Replicas = ranks / (stages x tensor ways); "
             "the batch counts replicas. Step time split by the trainer's measured fractions; "
             "bubble = the pipeline's measured idle fraction (ideal (S-1)/(M+S-1)); peak RSS = "
             "the largest rank's.", "",
             "| ranks | nodes | stages | tensor ways | replicas | per-replica batch | global batch "
             "| samples/s | speed-up | efficiency | step ms | input ms | compute ms | comm ms "
             "| bubble (ideal) | peak RSS MiB | test | verdict |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
             "|---|---|"]
    for r in rows:
        bubble = cell(r["bubble_fraction"], ".2f")
        if bubble and r["ideal_bubble_fraction"] == r["ideal_bubble_fraction"]:
            bubble += f" ({r['ideal_bubble_fraction']:.2f})"
        lines.append(f"| {r['ranks']} | {r['nodes']} | {r['stages']} | {r['tensor_ways']} "
                     f"| {r['replicas']} | {r['per_rank_batch']} | {r['global_batch']} "
                     f"| {r['samples_per_s']:.1f} | {r['speedup']:.2f} "
                     f"| {r['efficiency'] * 100:.0f}% | {r['step_ms']:.2f} | {r['input_ms']:.2f} "
                     f"| {r['compute_ms']:.2f} | {r['comm_ms']:.2f} | {bubble} "
                     f"| {cell(r['peak_rss_mib'], '.0f')} | {r['test']} | {r['verdict']} |")
    failed = [p for p in points if "error" in p]
    if failed:
        lines += ["", "Failed points:", ""]
        lines += [f"- {p['name']} ({point_label(p)}): {p['error']}; log `{p['log']}`"
                  for p in failed]
    if spec["skipped"]:
        lines += ["", "Skipped points (the grid does not factor the rank count):", ""]
        lines += [f"- {line}" for line in spec["skipped"]]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(out_dir, spec, rows):
    """Returns the PNG path, or None (with a warning) when gnuplot is missing or fails."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("scaling_study: warning: gnuplot not found; no plot", file=sys.stderr)
        return None
    # One data block per grid (gnuplot's `index`), in the rows' order.
    series = []
    for r in rows:
        grid = f"{r['stages']}x{r['tensor_ways']}"
        if not series or series[-1][0] != grid:
            series.append((grid, []))
        series[-1][1].append(r)
    data = os.path.join(out_dir, "scaling.dat")
    with open(data, "w") as f:
        for grid, block in series:
            f.write(f"# grid {grid}: ranks speedup ideal efficiency\n")
            for r in block:
                f.write(f"{r['ranks']} {r['speedup']:.6f} {r['ideal']:.6f} {r['efficiency']:.6f}\n")
            f.write("\n\n")
    png = os.path.join(out_dir, "scaling.png")
    max_ranks = max(r["ranks"] for r in rows)
    title = f"{spec['name']}: {spec['scaling']} scaling".replace("'", "''")
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    # The ideal line once per baseline rank count (grids with the same smallest run share it).
    speedup, efficiency, baselines = [], [], []
    for i, (grid, block) in enumerate(series):
        colour = colours[i % len(colours)]
        what = "measured" if len(series) == 1 else f"grid {grid}"
        if block[0]["ranks"] not in baselines:
            baselines.append(block[0]["ranks"])
            ideal = "ideal" if len(baselines) == 1 else f"ideal from {block[0]['ranks']} ranks"
            speedup.append(f"'{data}' index {i} using 1:3 with lines dashtype 2 lw 2 lc rgb "
                           f"'#888888' title '{ideal}'")
        speedup.append(f"'{data}' index {i} using 1:2 with linespoints pt 7 lw 2 lc rgb "
                       f"'{colour}' title '{what}'")
        efficiency.append(f"'{data}' index {i} using 1:4 with linespoints pt 7 lw 2 lc rgb "
                          f"'{colours[(i + (1 if len(series) == 1 else 0)) % len(colours)]}' "
                          f"title '{what}'")
    script = f"""
set terminal pngcairo noenhanced size 900,420 font ",10"
set output '{png}'
set multiplot layout 1,2 title '{title}'
set xlabel 'ranks'
set grid
set key top left
set xrange [0.8:{max_ranks * 1.1}]
set logscale x 2
set ylabel 'speed-up (samples/s over the smallest run of its grid)'
set yrange [0:*]
plot {", ".join(speedup)}
set ylabel 'efficiency (speed-up / ideal)'
set yrange [0:1.2]
set key bottom left
plot 1 with lines dashtype 2 lw 2 lc rgb '#888888' title 'ideal', {", ".join(efficiency)}
unset multiplot
"""
    r = subprocess.run([gnuplot], input=script, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0 or not os.path.exists(png):
        print(f"scaling_study: warning: gnuplot failed: {r.stderr.strip()}", file=sys.stderr)
        return None
    return png
