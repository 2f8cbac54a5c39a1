#!/usr/bin/env bash
# Tests slurm/scaling_study.py with tests/slurm/fake_trainer.py (samples/s = 1000 * ranks *
# 0.9^log2(ranks), so speed-up 1.80 / 3.24 and efficiency 90% / 81% at 2 / 4 ranks).
#   scaling_study_test.sh mpirun   weak and strong studies with mpirun on this machine, a failing
#                                  point (study goes on / --stop-on-failure), a missing summary,
#                                  a bad spec
#   scaling_study_test.sh sbatch   weak studies through a real local Slurm (local_slurm.sh): srun
#                                  with one point failing, then mpirun inside the jobs; every
#                                  daemon is stopped on exit, also on failure.
#   scaling_study_test.sh sbatch_nodes  grid points (2x1, 1x2) on a local Slurm of 2 nodes, with
#                                  srun and with mpirun, and slurm/cpu.sbatch with 2 stages:
#                                  which rank, stage and tensor way runs on which node.
# Exit 77 (skip) for sbatch and sbatch_nodes when not root or Slurm is missing.
set -uo pipefail
mode=${1:?mpirun|sbatch|sbatch_nodes}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
study=$src/slurm/scaling_study.py
fake=$here/fake_trainer.py
work=$(mktemp -d "${TMPDIR:-/tmp}/scaling_study_test.XXXXXX")
failures=0

cleanup() {
  [ -f "$work/slurm/env.sh" ] && "$here/local_slurm.sh" stop "$work/slurm" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_grep() {  # FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { fail "$3: no line matching '$2' in $1:"; sed 's/^/    /' "$1" >&2; }
}
expect_no_grep() {
  ! grep -Eq -- "$2" "$1" || fail "$3: unexpected line matching '$2' in $1"
}
expect_rc() {  # GOT WANT WHAT
  [ "$1" -eq "$2" ] || fail "$3: exit status $1, expected $2"
}
expect_png() {
  [ -f "$1" ] || { fail "no plot $1"; return; }
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$1 is not a PNG"
}
spec() {  # FILE SCALING BATCH
  cat >"$1" <<SPEC
[study]
name = test_$2
config = configs/fmnist_mlp.ini   # the fake trainer only passes it through
ranks = 1,2,4
nodes = 1
scaling = $2
batch = $3
overrides = --train.max_steps=10 --train.epochs=1
SPEC
}
spec "$work/weak.ini" weak 64
spec "$work/strong.ini" strong 64
common=(--trainer "$fake" --timeout 60)

if [ "$mode" = mpirun ]; then
  # Weak scaling: every point succeeds.
  "$study" "$work/weak.ini" --mode mpirun --out "$work/weak" "${common[@]}" >"$work/weak.out" 2>"$work/weak.err"
  expect_rc $? 0 "weak study"
  csv=$work/weak/results.csv md=$work/weak/results.md
  expect_grep "$csv" '^ranks,nodes,per_rank_batch,global_batch,steps,samples_per_s,speedup,ideal,efficiency,step_ms,input_ms,compute_ms,comm_ms,test,verdict,stages,tensor_ways,replicas,bubble_fraction,ideal_bubble_fraction,peak_rss_mib$' "csv header"
  expect_grep "$csv" '^1,1,64,64,10,1000\.0000,1\.0000,1\.0000,1\.0000,' "csv 1 rank"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,1\.8000,2\.0000,0\.9000,' "csv 2 ranks"
  expect_grep "$csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,' "csv 4 ranks"
  [ "$(wc -l <"$csv")" -eq 4 ] || fail "weak csv has $(wc -l <"$csv") lines, expected 4"
  expect_grep "$csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,.*,compute-bound,1,1,4,,,403\.0000$' "csv 4 ranks grid columns"
  expect_grep "$md" '^\| ranks \| nodes \| stages \| tensor ways \| replicas \| per-replica batch \| global batch \| samples/s \| speed-up \| efficiency \| step ms \| input ms \| compute ms \| comm ms \| bubble \(ideal\) \| peak RSS MiB \| test \| verdict \|$' "md header"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \| 1\.80 \| 90% \| 71\.11 \| 3\.56 \| 64\.00 \| 3\.56 \|  \| 401 \| acc 0\.8500 \| compute-bound \|$' "md 2 ranks"
  expect_grep "$md" '^\| 4 \| 1 \| 1 \| 1 \| 4 \| 64 \| 256 \| 3240\.0 \| 3\.24 \| 81% \|' "md 4 ranks"
  expect_no_grep "$md" 'Failed points' "weak study has no failures"
  expect_png "$work/weak/scaling.png"
  # Every rank ran through launch.sh (one line per rank in the 4-rank log).
  [ "$(grep -c '^fake_trainer: rank [0-3]/4' "$work/weak/points/r4_n1/run.log")" -eq 4 ] ||
    fail "4-rank point did not run 4 ranks"

  # Strong scaling: the global batch stays 64, the per-rank batch shrinks.
  "$study" "$work/strong.ini" --mode mpirun --out "$work/strong" "${common[@]}" \
    --mpirun-args="--mca btl self,vader,tcp" >"$work/strong.out" 2>&1
  expect_rc $? 0 "strong study"
  expect_grep "$work/strong/results.csv" '^1,1,64,64,' "strong 1 rank"
  expect_grep "$work/strong/results.csv" '^2,1,32,64,' "strong 2 ranks"
  expect_grep "$work/strong/results.csv" '^4,1,16,64,' "strong 4 ranks"
  grep -q -- '--train.batch_semantics=global' "$work/strong/points/r2_n1/run.log" ||
    fail "strong study did not pass --train.batch_semantics=global"
  grep -q -- '--mca btl self,vader,tcp .*launch.sh' "$work/strong/points/r2_n1/run.log" ||
    fail "--mpirun-args not passed through"

  # A failing point: its log tail is shown, the study goes on, exit 1.
  FAKE_TRAINER_FAIL_RANKS=2 "$study" "$work/weak.ini" --mode mpirun --out "$work/fail" "${common[@]}" >"$work/fail.out" 2>"$work/fail.err"
  expect_rc $? 1 "failing point"
  expect_grep "$work/fail.err" 'point r2_n1 \(2 ranks, 1 nodes\) failed: exit status 1' "failure named"
  expect_grep "$work/fail.err" 'simulated failure with 2 ranks' "failure log tail"
  expect_grep "$work/fail/results.csv" '^4,1,64,256,' "study went on after the failure"
  expect_no_grep "$work/fail/results.csv" '^2,' "failed point not in the table"
  expect_grep "$work/fail/results.md" '^- r2_n1 \(2 ranks, 1 nodes\): exit status 1' "failure listed in markdown"

  # --stop-on-failure: nothing after the failed point runs.
  FAKE_TRAINER_FAIL_RANKS=2 "$study" "$work/weak.ini" --mode mpirun --out "$work/stop" --stop-on-failure "${common[@]}" >"$work/stop.out" 2>&1
  expect_rc $? 1 "stop on failure"
  expect_grep "$work/stop/results.csv" '^1,1,' "stop: first point kept"
  expect_no_grep "$work/stop/results.csv" '^4,' "stop: 4-rank point not run"
  expect_grep "$work/stop/results.md" '^- r4_n1 .*not run' "stop: 4-rank point listed as not run"

  # A run that exits 0 without summary.json is an error naming the run.
  FAKE_TRAINER_NO_SUMMARY=4 "$study" "$work/weak.ini" --mode mpirun --out "$work/nosum" "${common[@]}" >"$work/nosum.out" 2>"$work/nosum.err"
  expect_rc $? 1 "missing summary"
  expect_grep "$work/nosum.err" 'run r4_n1 wrote no summary.json' "missing summary named"

  # A bad spec: exit 2, the file and key named, nothing run.
  printf '[study]\nconfig = x.ini\nranks = 1,two\nscaling = weak\nbatch = 8\n' >"$work/bad.ini"
  "$study" "$work/bad.ini" --mode mpirun --out "$work/bad" "${common[@]}" >"$work/bad.out" 2>&1
  expect_rc $? 2 "bad spec"
  expect_grep "$work/bad.out" 'bad\.ini: \[study\] ranks = .1,two.: expected comma-separated integers' "bad spec named"
  printf '[study]\nconfig = x.ini\nranks = 1\nscaling = sideways\nbatch = 8\n' >"$work/bad2.ini"
  "$study" "$work/bad2.ini" --mode mpirun --out "$work/bad" "${common[@]}" >"$work/bad2.out" 2>&1
  expect_rc $? 2 "bad scaling"
  expect_grep "$work/bad2.out" "scaling = 'sideways': expected weak or strong" "bad scaling named"
elif [ "$mode" = sbatch ]; then
  "$here/local_slurm.sh" start "$work/slurm" >"$work/slurm.out" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$work/slurm.out"; exit 77; fi
  [ $rc -eq 0 ] || { cat "$work/slurm.out" >&2; echo "FAIL: local Slurm did not start" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$work/slurm/env.sh"
  # One job per point, chained; the 2-rank point fails, the 4-rank one still runs (the node has
  # fewer CPUs than 4 ranks here, hence --overcommit; the fake trainer is no MPI program).
  FAKE_TRAINER_FAIL_RANKS=2 "$study" "$work/weak.ini" --mode sbatch --out "$work/sb" "${common[@]}" \
    --srun-mpi none --overcommit --poll 0.3 >"$work/sb.out" 2>"$work/sb.err"
  expect_rc $? 1 "sbatch study with a failing point"
  expect_grep "$work/sb.out" '\[r4_n1\] job [0-9]+: srun --mpi=none --nodes=1 --ntasks=4' "jobs submitted"
  expect_grep "$work/sb.err" 'point r2_n1 \(2 ranks, 1 nodes\) failed: job [0-9]+ ended FAILED' "failed job named"
  expect_grep "$work/sb.err" 'simulated failure with 2 ranks' "failed job log tail"
  expect_grep "$work/sb/results.csv" '^1,1,64,64,10,1000\.0000,1\.0000,1\.0000,1\.0000,' "sbatch 1 rank"
  expect_grep "$work/sb/results.csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,' "sbatch 4 ranks"
  expect_grep "$work/sb/results.md" '^\| 4 \| 1 \| 1 \| 1 \| 4 \| 64 \| 256 \| 3240\.0 \| 3\.24 \| 81% \|' "sbatch md"
  expect_grep "$work/sb/points/r4_n1/job.sbatch" '^#SBATCH --ntasks=4$' "job script"
  grep -q -- '--dependency=afterany:' "$work/sb/study.json" || fail "jobs not chained with --dependency"
  expect_png "$work/sb/scaling.png"
  [ -z "$(squeue -h 2>/dev/null)" ] || fail "jobs left in the queue: $(squeue -h)"
  # Ranks started by mpirun inside each allocation instead of srun: every point succeeds.
  "$study" "$work/weak.ini" --mode sbatch --launcher mpirun --out "$work/sbm" "${common[@]}" \
    --overcommit --poll 0.3 >"$work/sbm.out" 2>"$work/sbm.err"
  expect_rc $? 0 "sbatch study with mpirun"
  expect_grep "$work/sbm/points/r4_n1/job.sbatch" '^mpirun -np 4 .*slurm/launch\.sh -- ' "mpirun in the job"
  expect_grep "$work/sbm/results.csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,' "sbatch+mpirun 4 ranks"
elif [ "$mode" = sbatch_nodes ]; then
  # Two Slurm nodes (sf0, sf1; both this machine): 2 ranks per node, each node one pipeline
  # stage (2x1), or the 2 tensor ways of a replica on one node (1x2); srun's default block
  # distribution and mpirun inside the allocation place ranks 0,1 on sf0 and 2,3 on sf1.
  "$here/local_slurm.sh" start "$work/slurm" --nodes 2 >"$work/slurm.out" 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then cat "$work/slurm.out"; exit 77; fi
  [ $rc -eq 0 ] || { cat "$work/slurm.out" >&2; echo "FAIL: local Slurm did not start" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$work/slurm/env.sh"
  for launcher in srun mpirun; do
    out=$work/nodes_$launcher
    "$study" "$work/weak.ini" --mode sbatch --launcher $launcher --srun-mpi none --out "$out" \
      --ranks 2,4 --nodes 1,2 --grids 2x1,1x2 "${common[@]}" --poll 0.3 >"$out.out" 2>"$out.err"
    expect_rc $? 0 "2-node grid study ($launcher)"
    expect_grep "$out/points/r4_n2_g2x1/job.sbatch" '^#SBATCH --nodes=2$' "$launcher: job on 2 nodes"
    expect_grep "$out/points/r4_n2_g2x1/job.sbatch" '^#SBATCH --ntasks-per-node=2$' "$launcher: 2 ranks per node"
    for row in 'rank 0 on sf0 is stage 0 replica 0 way 0' 'rank 1 on sf0 is stage 0 replica 1 way 0' \
               'rank 2 on sf1 is stage 1 replica 0 way 0' 'rank 3 on sf1 is stage 1 replica 1 way 0'; do
      expect_grep "$out/points/r4_n2_g2x1/run.log" "^fake_trainer: $row\$" "$launcher 2x1: $row"
    done
    for row in 'rank 0 on sf0 is stage 0 replica 0 way 0' 'rank 1 on sf0 is stage 0 replica 0 way 1' \
               'rank 2 on sf1 is stage 0 replica 1 way 0' 'rank 3 on sf1 is stage 0 replica 1 way 1'; do
      expect_grep "$out/points/r4_n2_g1x2/run.log" "^fake_trainer: $row\$" "$launcher 1x2: $row"
    done
    expect_grep "$out/results.csv" '^4,2,64,128,10,2592\.0000,1\.8000,2\.0000,0\.9000,.*,2,1,2,' "$launcher: 2x1 row"
    expect_grep "$out/results.csv" '^4,2,64,128,10,3240\.0000,1\.8000,2\.0000,0\.9000,.*,1,2,2,' "$launcher: 1x2 row"
  done
  # The template itself (cpu.sbatch, mpirun inside the job) on 2 nodes x 2 ranks with 2 stages:
  # one stage per node. (Its srun --mpi=pmix path cannot run here: the two slurmd of one machine
  # share /tmp, where PMIx makes a folder per step and node.)
  home=$work/home
  mkdir -p "$home/build/bin"
  ln -s "$src/slurm" "$home/slurm"
  ln -s "$fake" "$home/build/bin/shardflow-train"
  job=$(cd "$home" && SHARDFLOW_LAUNCHER=mpirun SHARDFLOW_OUTPUT=$work/tpl sbatch --parsable \
        --nodes=2 --ntasks-per-node=2 --output="$work/tpl.log" slurm/cpu.sbatch \
        "$src/configs/fmnist_mlp.ini" --dist.pipeline_stages=2)
  for _ in $(seq 100); do [ -n "$(squeue -h -j "$job" 2>/dev/null)" ] || break; sleep 0.3; done
  for row in 'rank 0 on sf0 is stage 0 replica 0' 'rank 1 on sf0 is stage 0 replica 1' \
             'rank 2 on sf1 is stage 1 replica 0' 'rank 3 on sf1 is stage 1 replica 1'; do
    expect_grep "$work/tpl.log" "^fake_trainer: $row way 0\$" "cpu.sbatch on 2 nodes: $row"
  done
  [ -z "$(squeue -h 2>/dev/null)" ] || fail "jobs left in the queue: $(squeue -h)"
else
  echo "usage: $0 mpirun|sbatch|sbatch_nodes" >&2
  exit 2
fi

if [ $failures -ne 0 ]; then
  echo "scaling_study_test $mode: $failures check(s) failed; outputs:" >&2
  for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "== $f" >&2; tail -30 "$f" >&2; }; done
  exit 1
fi
echo "scaling_study_test $mode: all checks passed"
