#!/usr/bin/env bash
# slurm/scaling_study.py takes its axes on the command line (issue 24, item 11): the MLP weak
# study (ranks 1,2,4,8 in its spec) run with --ranks 1,2 and --overrides runs exactly 1 and 2
# ranks, with tests/slurm/fake_trainer.py standing in for shardflow-train. Prints
# "scaling_study_ranks.sh: ok" last.
#   scaling_study_ranks.sh WORK_DIR            the ranks axis
#   scaling_study_ranks.sh WORK_DIR grids      the grid axis (issue 13): --grids SxT points, the
#                                              flags passed, skipped points, names, report
#                                              columns, a run on another grid, tensor ways
#                                              across nodes, bad grid strings
set -euo pipefail
work=$1 mode=${2:-ranks}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "scaling_study_ranks.sh: FAILED: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cd "$src"
fake=$src/tests/slurm/fake_trainer.py
study() {  # OUT_NAME ARGS...: the MLP weak study with the fake trainer; output in $work/OUT_NAME.log
  local name=$1
  shift
  slurm/scaling_study.py configs/studies/fmnist_mlp_weak.ini --mode mpirun --out "$work/$name" \
    --trainer "$fake" --timeout 60 --overrides='--train.max_steps=10 --train.epochs=1' "$@" \
    >"$work/$name.log" 2>&1
}
has() {  # FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { sed 's/^/    /' "$1"; fail "$3: no line matching '$2' in $1"; }
}

if [ "$mode" = ranks ]; then
  study out --ranks 1,2 || { cat "$work/out.log"; fail "the study failed"; }
  got=$(cut -d, -f1 "$work/out/results.csv" | tail -n +2 | tr '\n' ' ')
  [ "$got" = "1 2 " ] || fail "rank counts run: '$got', wanted '1 2 '"
  grep -q -- "--train.max_steps=10" "$work/out/points/r2_n1/run.log" || fail "--overrides not used"
  echo "scaling_study_ranks.sh: ok"
  exit 0
fi
[ "$mode" = grids ] || { echo "usage: $0 WORK_DIR [ranks|grids]" >&2; exit 2; }

# The grid axis: 1x1 keeps its names; 2x1 skips 1 rank, 2x2 skips 1 and 2 ranks.
study grids --ranks 1,2,4 --grids 1x1,2x1,2x2 || { cat "$work/grids.log"; fail "grid study failed"; }
out=$work/grids
[ "$(ls "$out/points" | tr '\n' ' ')" = "r1_n1 r2_n1 r2_n1_g2x1 r4_n1 r4_n1_g2x1 r4_n1_g2x2 " ] ||
  fail "points run: $(ls "$out/points" | tr '\n' ' ')"
[ "$(grep -c '^scaling_study: skipping point ' "$work/grids.log")" -eq 3 ] || fail "not 3 skip lines"
has "$work/grids.log" '^scaling_study: skipping point r1_n1_g2x1: 1 ranks do not factor into data replicas x 2 stages x 1 tensor way$' "skip 2x1"
has "$work/grids.log" '^scaling_study: skipping point r2_n1_g2x2: 2 ranks do not factor into data replicas x 2 stages x 2 tensor ways$' "skip 2x2"
has "$out/points/r4_n1_g2x2/run.log" ' --dist\.pipeline_stages=2 --dist\.tensor_parallel=2 ' "2x2 flags"
has "$out/points/r2_n1_g2x1/run.log" ' --dist\.pipeline_stages=2 --dist\.tensor_parallel=1 ' "2x1 flags"
has "$out/points/r2_n1/run.log" ' --dist\.pipeline_stages=1 --dist\.tensor_parallel=1 ' "1x1 flags"
has "$out/points/r4_n1_g2x2/run.log" '^fake_trainer: rank 3 on .* is stage 1 replica 0 way 1$' "2x2 placement"
# Rows grid by grid; speed-up within a grid (2x1: 1440 -> 2592 samples/s is 1.80, not 2592/1000).
csv=$out/results.csv md=$out/results.md
[ "$(tail -n +2 "$csv" | cut -d, -f1,16,17 | tr '\n' ' ')" = "1,1,1 2,1,1 4,1,1 2,2,1 4,2,1 4,2,2 " ] ||
  fail "csv rows (ranks,stages,ways): $(tail -n +2 "$csv" | cut -d, -f1,16,17 | tr '\n' ' ')"
has "$csv" '^ranks,nodes,per_rank_batch,global_batch,steps,samples_per_s,speedup,ideal,efficiency,step_ms,input_ms,compute_ms,comm_ms,test,verdict,stages,tensor_ways,replicas,bubble_fraction,ideal_bubble_fraction,peak_rss_mib,runs,samples_per_s_min,samples_per_s_max,samples_per_s_runs,cores,oversubscribed$' "csv header"
has "$csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,.*,compute-bound,1,1,4,,,403\.0000,1,3240\.0000,3240\.0000,3240\.0000,' "csv 1x1 4 ranks"
has "$csv" '^2,1,64,64,10,1440\.0000,1\.0000,1\.0000,1\.0000,.*,2,1,1,0\.2500,0\.2000,251\.0000,1,' "csv 2x1 2 ranks"
has "$csv" '^4,1,64,128,10,2592\.0000,1\.8000,2\.0000,0\.9000,.*,2,1,2,0\.2500,0\.2000,253\.0000,1,' "csv 2x1 4 ranks"
has "$csv" '^4,1,64,64,10,2592\.0000,1\.0000,1\.0000,1\.0000,.*,2,2,1,0\.2500,0\.2000,178\.0000,1,' "csv 2x2 4 ranks"
has "$md" '^\| ranks \| nodes \| stages \| tensor ways \| replicas \| per-replica batch \| global batch \| samples/s \| speed-up \| efficiency \| step ms \| input ms \| compute ms \| comm ms \| bubble \(ideal\) \| peak RSS MiB \| test \| verdict \| runs \| note \|$' "md header"
has "$md" '^\| 4 \| 1 \| 2 \| 1 \| 2 \| 64 \| 128 \| 2592\.0 \| 1\.80 \| 90% \| .* \| 0\.25 \(0\.20\) \| 253 \| acc 0\.8500 \| compute-bound \| 1 \| [^|]* \|$' "md 2x1 4 ranks"
has "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \| 1\.80 \| 90% \| .* \|  \| 401 \| acc 0\.8500 \| compute-bound \| 1 \| [^|]* \|$' "md 1x1: bubble blank"
has "$md" '^- r2_n1_g2x2: 2 ranks do not factor into data replicas x 2 stages x 2 tensor ways$' "md lists skipped"
[ -f "$out/scaling.png" ] || ! command -v gnuplot >/dev/null || fail "no plot of the grid series"

# Peak RSS absent: blank; strong scaling divides the global batch by the replicas.
FAKE_TRAINER_NO_RSS=1 study norss --ranks 4 --grids 2x1 --scaling strong --batch 64 ||
  { cat "$work/norss.log"; fail "strong 2x1 study failed"; }
has "$work/norss/results.csv" '^4,1,32,64,10,2592\.0000,.*,2,1,2,0\.2500,0\.2000,,1,' "strong 2x1, no RSS"
has "$work/norss/results.md" '^\| 4 \| 1 \| 2 \| 1 \| 2 \| 32 \| 64 \| .* \| 0\.25 \(0\.20\) \|  \| acc' "md RSS blank"
has "$work/norss/points/r4_n1_g2x1/run.log" ' --train\.batch_semantics=global ' "strong semantics"

# A run whose summary names another grid is a failed point, naming both.
FAKE_TRAINER_GRID_TEXT='1 replica x 1 stage x 2 tensor ways, 1f1b, 1 micro-batches' \
  study wrong --ranks 2 --grids 2x1 && fail "a run on the wrong grid passed"
has "$work/wrong.log" "run r2_n1_g2x1 ran the grid '1 replica x 1 stage x 2 tensor ways, 1f1b, 1 micro-batches', not 1 replica x 2 stages x 1 tensor way" "wrong grid named"

# Tensor ways wider than a node's ranks: a warning, the point still runs (mpirun without
# --map-by, so two "nodes" fit this machine).
printf '#!/bin/sh\n# mpirun without --map-by\nfor a; do shift; case "$a" in --map-by) skip=1; continue;; esac\n  [ -n "${skip:-}" ] && { skip=; continue; }; set -- "$@" "$a"; done\nexec mpirun --oversubscribe "$@"\n' >"$work/mpirun"
chmod +x "$work/mpirun"
study nodes --ranks 4 --nodes 2 --grids 2x1,1x4 --mpirun "$work/mpirun" ||
  { cat "$work/nodes.log"; fail "2-node grid study failed"; }
has "$work/nodes.log" '^scaling_study: warning: point r4_n2_g1x4: 4 tensor ways do not fit 2 ranks per node, so some tensor groups span nodes$' "ways across nodes warned"
[ "$(grep -c 'warning: point' "$work/nodes.log")" -eq 1 ] || fail "2x1 on 2 nodes warned too"
[ -f "$work/nodes/points/r4_n2_g2x1/summary.json" ] || fail "no point r4_n2_g2x1"

# Bad grids: one error line each, exit 2, nothing run.
expect_error() {  # WHAT REGEX ARGS...
  local what=$1 regex=$2 rc=0
  shift 2
  study bad "$@" || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit status $rc, wanted 2"
  [ "$(wc -l <"$work/bad.log")" -eq 1 ] || { cat "$work/bad.log"; fail "$what: not one line"; }
  has "$work/bad.log" "$regex" "$what"
  [ ! -e "$work/bad" ] || fail "$what: the study ran"
}
expect_error "2y1" "^scaling_study: error: .*fmnist_mlp_weak\.ini: \[study\] grids = '1x1,2y1': bad entry '2y1': expected SxT \(pipeline stages x tensor ways, both >= 1\), e\.g\. 1x1,2x1,2x2$" --grids 1x1,2y1
expect_error "0x1" "grids = '0x1': bad entry '0x1': expected SxT" --grids 0x1
expect_error "empty entry" "grids = '2x1,': bad entry '': expected SxT" --grids 2x1,
expect_error "repeat" "grids = '2x1,2x1': 2x1 given twice$" --grids 2x1,2x1
expect_error "fits nothing" "\[study\] grids: 4x1 fits none of the rank counts 1,2 \(4 ranks per replica\)$" --ranks 1,2 --grids 1x1,4x1
expect_error "grid in overrides" "overrides set --dist\.pipeline_stages: give the grid with grids = SxT \(--grids\) instead$" --overrides=--dist.pipeline_stages=2
echo "scaling_study_ranks.sh: ok"
