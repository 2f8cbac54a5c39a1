#!/usr/bin/env python3
"""Every config in configs/ states the figure it was measured at, with the command (issue 24,
item 13): a "# Measured: ..." comment whose decimal figures all appear in BENCHMARKS.md and that
names a command after "with:"; no "NOT YET MEASURED" left. Prints "config_figures.py: ok" last.
    config_figures.py SOURCE_DIR
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1])
benchmarks = (src / "BENCHMARKS.md").read_text()
problems = []
configs = sorted((src / "configs").rglob("*.ini"))
for path in configs:
    name = path.relative_to(src)
    lines = path.read_text().splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line[1:].strip())
    text = " ".join(header)
    if "NOT YET MEASURED" in text.upper():
        problems.append(f"{name}: says NOT YET MEASURED")
    found = re.search(r"Measured: (.*?) with:\s*(\S+)", text)
    if not found:
        problems.append(f"{name}: no '# Measured: FIGURE ... with: COMMAND' in its header")
        continue
    figures = re.findall(r"\d+\.\d+", found.group(1))
    if not figures:
        problems.append(f"{name}: the Measured line has no figure")
    for figure in figures:
        if figure not in benchmarks:
            problems.append(f"{name}: figure {figure} is not in BENCHMARKS.md")
for problem in problems:
    print(problem)
if problems or not configs:
    print(f"config_figures.py: FAILED ({len(problems)} problems in {len(configs)} configs)")
    sys.exit(1)
print(f"{len(configs)} configs state their measured figures")
print("config_figures.py: ok")
