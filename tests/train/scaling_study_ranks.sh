#!/usr/bin/env bash
# slurm/scaling_study.py takes its axes on the command line (issue 24, item 11): the MLP weak
# study (ranks 1,2,4,8 in its spec) run with --ranks 1,2 and --overrides runs exactly 1 and 2
# ranks, with tests/slurm/fake_trainer.py standing in for shardflow-train. Prints
# "scaling_study_ranks.sh: ok" last.
#   scaling_study_ranks.sh WORK_DIR
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "scaling_study_ranks.sh: FAILED: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cd "$src"
slurm/scaling_study.py configs/studies/fmnist_mlp_weak.ini --mode mpirun --out "$work/out" \
  --trainer "$src/tests/slurm/fake_trainer.py" --timeout 60 --ranks 1,2 \
  --overrides='--train.max_steps=10 --train.epochs=1' >"$work/study.log" 2>&1 ||
  { cat "$work/study.log"; fail "the study failed"; }
got=$(cut -d, -f1 "$work/out/results.csv" | tail -n +2 | tr '\n' ' ')
[ "$got" = "1 2 " ] || fail "rank counts run: '$got', wanted '1 2 '"
grep -q -- "--train.max_steps=10" "$work/out/points/r2_n1/run.log" || fail "--overrides not used"
echo "scaling_study_ranks.sh: ok"
