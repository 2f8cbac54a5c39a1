#!/usr/bin/env bash
# slurm/scaling_study.py --simulate: the weak-scaling study of the MLP spec replayed on the
# simulated InfiniBand fat tree at 4 and 16 ranks, with the step times of a real run's
# summary.json (bench/results/sim/mlp.summary.json). The table must be marked SIMULATED, have
# one row per rank count, a step no shorter than the run's input + compute time, and
# efficiency at most 100% (the all-reduce of 2 MiB is not free).
#   tests/sim/scaling_study_simulate_test.sh SOURCE_DIR BUILD_DIR
# Exit 77 (CTest SKIP) without SimGrid's smpirun or the simulated build.
set -euo pipefail
src=${1:?usage: scaling_study_simulate_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: scaling_study_simulate_test.sh SOURCE_DIR BUILD_DIR}
if ! command -v smpirun >/dev/null || [ ! -x "$build/sim/smpi/shardflow-sim" ]; then
  echo "SKIP: SimGrid SMPI (smpirun) or $build/sim/smpi/shardflow-sim is absent"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
SHARDFLOW_BUILD_DIR=$build timeout 100 python3 "$src/slurm/scaling_study.py" \
  "$src/configs/studies/fmnist_mlp_weak.ini" --simulate ib_fattree --ranks 4,16 --nodes 1 \
  --summary "$src/bench/results/sim/mlp.summary.json" --out "$out" > "$out/stdout"
cat "$out/stdout"
python3 - "$out/results.csv" "$out/stdout" "$src/bench/results/sim/mlp.summary.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
text = open(sys.argv[2]).read()
s = json.load(open(sys.argv[3]))
floor_ms = 1e3 * s["wall_s"] / s["steps"] * (s["compute_fraction"] + s["input_wait_fraction"])
assert "SIMULATED on ib_fattree" in text, "table not marked SIMULATED"
assert [int(r["ranks"]) for r in rows] == [4, 16], f"rows {[r['ranks'] for r in rows]}"
for r in rows:
    assert r["verdict"] == "SIMULATED", r
    assert float(r["step_ms"]) >= floor_ms * 0.999, f"step {r['step_ms']} ms < {floor_ms} ms"
    assert float(r["comm_ms"]) > 0, f"no exposed all-reduce time at {r['ranks']} ranks"
    assert float(r["efficiency"]) <= 1.0 + 1e-9, r
print("scaling_study_simulate: ok")
PY
