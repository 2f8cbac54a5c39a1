"""The report of slurm/scaling_study.py: one row per point (the median of its runs; speed-up and
efficiency within each grid's series, from the medians), results.csv, results.md and scaling.png.
Every file is written through a temporary file and a rename; a plot that cannot be drawn leaves
the earlier one. Standard library only; functions of their arguments, no shared state."""

import csv
import io
import os
import shlex
import shutil
import statistics
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


def oversubscription(ranks, nodes, threads, cores):
    """'' when a point's ranks x threads fit the cores per node the launcher had (or the cores
    are unknown: None), else e.g. 'oversubscribed: 4 ranks on 2 cores'."""
    per_node = ranks // nodes
    if not cores or per_node * threads <= cores:
        return ""
    what = plural(per_node, "rank", "ranks") + (" per node" if nodes > 1 else "")
    if threads > 1:
        what += f" x {threads} threads"
    return f"oversubscribed: {what} on {plural(cores, 'core', 'cores')}"


def summaries(p):
    """A point's finished runs (summary.json dicts): p['summaries'], or the one p['summary']."""
    if p.get("summaries"):
        return p["summaries"]
    return [p["summary"]] if "summary" in p else []


def median(values):
    """The median of the figures a run reported (NaN: not reported), NaN when none did."""
    known = [v for v in values if v == v]
    return float(statistics.median(known)) if known else float("nan")


def compute_rows(points, grids):
    """One row per point with a finished run, grid by grid (the given order), then by ranks.
    A row holds the medians of the point's runs; speed-up and efficiency compare its median
    samples/s with that of the smallest rank count of the same grid."""
    rows = []
    for stages, ways in grids:
        ok = [p for p in points if summaries(p) and (p["stages"], p["ways"]) == (stages, ways)]
        if not ok:
            continue
        base = min(ok, key=lambda p: p["ranks"])
        base_rate = median([s["samples_per_s"] for s in summaries(base)])
        for p in sorted(ok, key=lambda p: (p["ranks"], p["nodes"])):
            rows.append(row_of(p, base, base_rate))
    return rows


def run_figures(s):
    """The numeric figures of one run's summary.json that a row reports (as medians)."""
    step_ms = 1000.0 * s["wall_s"] / s["steps"] if s["steps"] else 0.0
    figures = s.get("strategy_figures") or {}
    rss = s.get("peak_rss_mib") or []
    return {
        "samples_per_s": float(s["samples_per_s"]), "step_ms": step_ms,
        "input_ms": step_ms * s.get("input_wait_fraction", 0.0),
        "compute_ms": step_ms * s.get("compute_fraction", 0.0),
        "comm_ms": step_ms * s.get("comm_fraction", 0.0),
        "bubble_fraction": float(figures.get("bubble_fraction", "nan")),
        "ideal_bubble_fraction": float(figures.get("ideal_bubble_fraction", "nan")),
        "peak_rss_mib": float(max(rss)) if rss else float("nan"),
    }


def row_of(p, base, base_rate):
    runs = summaries(p)
    per_run = [run_figures(s) for s in runs]
    med = {key: median([f[key] for f in per_run]) for key in per_run[0]}
    rates = [f["samples_per_s"] for f in per_run]
    # The run of the median samples/s (the lower one of an even count) gives the text columns.
    s = runs[sorted(range(len(runs)), key=lambda i: rates[i])[(len(runs) - 1) // 2]]
    speedup = med["samples_per_s"] / base_rate if base_rate > 0 else 0.0
    ideal = p["ranks"] / base["ranks"]
    metric = ""
    if s.get("test_accuracy") is not None:
        metric = f"acc {s['test_accuracy']:.4f}"
    elif s.get("test_loss") is not None:
        metric = f"loss {s['test_loss']:.4f}"
    return dict(med, **{
        "ranks": p["ranks"], "nodes": p["nodes"],
        "per_rank_batch": s.get("per_rank_batch", ""), "global_batch": s.get("global_batch", ""),
        "steps": s["steps"], "speedup": speedup, "ideal": ideal, "efficiency": speedup / ideal,
        "test": metric, "verdict": s.get("verdict", ""),
        "stages": p["stages"], "tensor_ways": p["ways"],
        "replicas": p["ranks"] // (p["stages"] * p["ways"]),
        "runs": len(runs), "samples_per_s_min": min(rates), "samples_per_s_max": max(rates),
        "samples_per_s_runs": ";".join(f"{r:.4f}" for r in rates),
        "cores": p.get("cores") or "", "oversubscribed": p.get("oversubscribed", ""),
        "name": p.get("name", ""),
    })


# New columns go last: readers of older results.csv files keep their column positions.
# samples_per_s is the median over the point's runs, samples_per_s_runs every run's figure
# (';'-separated, in run order); cores: the cores per node the launcher had (blank: unknown).
CSV_FIELDS = ["ranks", "nodes", "per_rank_batch", "global_batch", "steps", "samples_per_s",
              "speedup", "ideal", "efficiency", "step_ms", "input_ms", "compute_ms", "comm_ms",
              "test", "verdict", "stages", "tensor_ways", "replicas", "bubble_fraction",
              "ideal_bubble_fraction", "peak_rss_mib", "runs", "samples_per_s_min",
              "samples_per_s_max", "samples_per_s_runs", "cores", "oversubscribed"]


def cell(value, fmt):
    """A float formatted with fmt, or blank for a figure the run did not report (NaN)."""
    if isinstance(value, float):
        return "" if value != value else format(value, fmt)
    return value


def write_atomic(path, text):
    """path gets text through a temporary file and a rename; a failed write leaves the old file."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_csv(path, rows):
    text = io.StringIO()
    w = csv.DictWriter(text, fieldnames=CSV_FIELDS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: cell(v, ".4f") for k, v in r.items()})
    write_atomic(path, text.getvalue())


def rate_cell(r):
    """Median samples/s, with the min-max spread when the point ran more than once."""
    text = f"{r['samples_per_s']:.1f}"
    if r.get("runs", 1) > 1:
        text += f" ({r['samples_per_s_min']:.1f}\u2013{r['samples_per_s_max']:.1f})"
    return text


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
             "the largest rank's. A point that ran more than once shows the median of its runs "
             "(samples/s: median, then min\u2013max; the other figures: medians), and its speed-up "
             "and efficiency come from the medians; runs = its finished runs.", "",
             "| ranks | nodes | stages | tensor ways | replicas | per-replica batch | global batch "
             "| samples/s | speed-up | efficiency | step ms | input ms | compute ms | comm ms "
             "| bubble (ideal) | peak RSS MiB | test | verdict | runs | note |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
             "|---|---|---:|---|"]
    for r in rows:
        bubble = cell(r["bubble_fraction"], ".2f")
        if bubble and r["ideal_bubble_fraction"] == r["ideal_bubble_fraction"]:
            bubble += f" ({r['ideal_bubble_fraction']:.2f})"
        lines.append(f"| {r['ranks']} | {r['nodes']} | {r['stages']} | {r['tensor_ways']} "
                     f"| {r['replicas']} | {r['per_rank_batch']} | {r['global_batch']} "
                     f"| {rate_cell(r)} | {r['speedup']:.2f} "
                     f"| {r['efficiency'] * 100:.0f}% | {r['step_ms']:.2f} | {r['input_ms']:.2f} "
                     f"| {r['compute_ms']:.2f} | {r['comm_ms']:.2f} | {bubble} "
                     f"| {cell(r['peak_rss_mib'], '.0f')} | {r['test']} | {r['verdict']} "
                     f"| {r.get('runs', 1)} | {r.get('oversubscribed', '')} |")
    lines += oversubscribed_lines(rows)
    failed = [p for p in points if "error" in p]
    if failed:
        lines += ["", "Failed points:", ""]
        lines += [f"- {p['name']} ({point_label(p)}){run_text(p)}: {p['error']}; log "
                  f"`{p['log']}`" for p in failed]
    if spec["skipped"]:
        lines += ["", "Skipped points (the grid does not factor the rank count):", ""]
        lines += [f"- {line}" for line in spec["skipped"]]
    write_atomic(path, "\n".join(lines) + "\n")


def run_text(p):
    """', run 2' for a point's second and later run folders (rR_nN_run2), '' for its first."""
    return f", run {p['run']}" if p.get("run", 1) > 1 else ""


def oversubscribed_lines(rows):
    """The report's paragraph on the points whose ranks x threads outnumbered the cores."""
    over = [r for r in rows if r.get("oversubscribed")]
    if not over:
        return []
    return (["", "Oversubscribed points: their ranks x threads outnumber the cores the launcher "
             "had, so the ranks take turns on the cores and wait for descheduled peers in every "
             "all-reduce. Their speed-up and efficiency measure that time-sharing, not how the "
             "training scales; run them where every rank has its own cores.", ""]
            + [f"- {r['ranks']} ranks, {r['nodes']} nodes"
               + (f", grid {r['stages']}x{r['tensor_ways']}"
                  if (r["stages"], r["tensor_ways"]) != (1, 1) else "")
               + f": {r['oversubscribed']} (efficiency {r['efficiency'] * 100:.0f}%)"
               for r in over])


def write_plot(out_dir, spec, rows):
    """Returns the PNG path, or None (with a warning) when gnuplot is missing or fails: then an
    earlier scaling.png stays as it was."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        kept = " (the earlier scaling.png is kept)" if os.path.exists(
            os.path.join(out_dir, "scaling.png")) else ""
        print(f"scaling_study: warning: gnuplot not found; no new plot{kept}", file=sys.stderr)
        return None
    # One data block per grid (gnuplot's `index`), in the rows' order.
    series = []
    for r in rows:
        grid = f"{r['stages']}x{r['tensor_ways']}"
        if not series or series[-1][0] != grid:
            series.append((grid, []))
        series[-1][1].append(r)
    data = os.path.join(out_dir, "scaling.dat")
    text = ""
    for grid, block in series:
        text += f"# grid {grid}: ranks speedup ideal efficiency\n"
        for r in block:
            text += f"{r['ranks']} {r['speedup']:.6f} {r['ideal']:.6f} {r['efficiency']:.6f}\n"
        text += "\n\n"
    write_atomic(data, text)
    png = os.path.join(out_dir, "scaling.png")
    # gnuplot draws into a temporary file, renamed over scaling.png only once it is complete.
    drawn = f"{png}.tmp{os.getpid()}.png"
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
set output '{drawn}'
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
    if r.returncode != 0 or not os.path.exists(drawn) or os.path.getsize(drawn) == 0:
        if os.path.exists(drawn):
            os.remove(drawn)
        kept = " (the earlier scaling.png is kept)" if os.path.exists(png) else ""
        print(f"scaling_study: warning: gnuplot failed{kept}: {r.stderr.strip()}",
              file=sys.stderr)
        return None
    os.replace(drawn, png)
    return png
