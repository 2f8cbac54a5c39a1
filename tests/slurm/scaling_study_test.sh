#!/usr/bin/env bash
# Tests slurm/scaling_study.py with tests/slurm/fake_trainer.py (samples/s = 1000 * ranks *
# 0.9^log2(ranks), so speed-up 1.80 / 3.24 and efficiency 90% / 81% at 2 / 4 ranks).
#   scaling_study_test.sh mpirun   weak and strong studies with mpirun on this machine, a failing
#                                  point (study goes on / --stop-on-failure), a missing summary,
#                                  a bad spec
#   scaling_study_test.sh sbatch   weak studies through a real local Slurm (local_slurm.sh): srun
#                                  with one point failing (its oversubscribed 4-rank point marked
#                                  from the CPUs the job logs), resumed (the failed point only),
#                                  refused while an earlier run's job is queued; then mpirun
#                                  inside the jobs; every daemon is stopped on exit, also on failure.
#   scaling_study_test.sh sbatch_nodes  grid points (2x1, 1x2) on a local Slurm of 2 nodes, with
#                                  srun and with mpirun, and slurm/cpu.sbatch with 2 stages:
#                                  which rank, stage and tensor way runs on which node.
#   scaling_study_test.sh rerun    reruns into the same --out (mpirun): finished points kept, not
#                                  run again; a failed later run, or a gnuplot that fails, leaves
#                                  the rows, results.md and scaling.png; a failed point is retried
#                                  in a new folder; other settings are refused in one line.
#   scaling_study_test.sh repeat   --repeat 3 with a fake trainer reporting 1.4x, 1x and 0.9x its
#                                  figure on successive runs: medians, min-max and every run's
#                                  figure; a larger --repeat on resume adds runs; bad --repeat.
#   scaling_study_test.sh oversubscribed  the driver on one CPU (taskset): the 2-rank point, and a
#                                  rank of 2 threads, are marked oversubscribed.
# The fake trainer, like shardflow-train, refuses an --output that already holds a run.
# Exit 77 (skip) for sbatch and sbatch_nodes when not root or Slurm is missing.
set -uo pipefail
mode=${1:?mpirun|sbatch|sbatch_nodes|rerun|repeat|oversubscribed}
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
  expect_grep "$csv" '^ranks,nodes,per_rank_batch,global_batch,steps,samples_per_s,speedup,ideal,efficiency,step_ms,input_ms,compute_ms,comm_ms,test,verdict,stages,tensor_ways,replicas,bubble_fraction,ideal_bubble_fraction,peak_rss_mib,runs,samples_per_s_min,samples_per_s_max,samples_per_s_runs,cores,oversubscribed$' "csv header"
  expect_grep "$csv" '^1,1,64,64,10,1000\.0000,1\.0000,1\.0000,1\.0000,' "csv 1 rank"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,1\.8000,2\.0000,0\.9000,' "csv 2 ranks"
  expect_grep "$csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,' "csv 4 ranks"
  [ "$(wc -l <"$csv")" -eq 4 ] || fail "weak csv has $(wc -l <"$csv") lines, expected 4"
  # The cores (this machine's) and so the oversubscribed column depend on the machine here.
  expect_grep "$csv" '^4,1,64,256,10,3240\.0000,3\.2400,4\.0000,0\.8100,.*,compute-bound,1,1,4,,,403\.0000,1,3240\.0000,3240\.0000,3240\.0000,[0-9]+,' "csv 4 ranks grid and run columns"
  expect_grep "$md" '^\| ranks \| nodes \| stages \| tensor ways \| replicas \| per-replica batch \| global batch \| samples/s \| speed-up \| efficiency \| step ms \| input ms \| compute ms \| comm ms \| bubble \(ideal\) \| peak RSS MiB \| test \| verdict \| runs \| note \|$' "md header"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \| 1\.80 \| 90% \| 71\.11 \| 3\.56 \| 64\.00 \| 3\.56 \|  \| 401 \| acc 0\.8500 \| compute-bound \| 1 \| [^|]* \|$' "md 2 ranks"
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
  # --overcommit: Slurm gives the job 1 CPU per node, which the job logs; the 4 ranks on it are
  # marked oversubscribed, the 1-rank point is not.
  expect_grep "$work/sb/points/r4_n1/run.log" '^scaling_study point r4_n1: 1 nodes \(.*\), 4 ranks, CPUs per node 1$' "job logs its CPUs"
  expect_grep "$work/sb/results.md" '^\| 4 \| 1 \| .* \| 81% \| .* \| 1 \| oversubscribed: 4 ranks on 1 core \|$' "sbatch: 4 ranks on 1 core marked"
  expect_grep "$work/sb/results.md" '^\| 1 \| 1 \| .* \| 1 \|  \|$' "sbatch: 1 rank not marked"
  expect_grep "$work/sb/results.csv" '^4,1,.*,1,oversubscribed: 4 ranks on 1 core$' "sbatch csv marked"
  grep -q -- '--dependency=afterany:' "$work/sb/study.json" || fail "jobs not chained with --dependency"
  expect_png "$work/sb/scaling.png"
  [ -z "$(squeue -h 2>/dev/null)" ] || fail "jobs left in the queue: $(squeue -h)"
  # Resuming: the failed 2-rank point runs again in a new folder (one job), the others are kept.
  "$study" "$work/weak.ini" --mode sbatch --out "$work/sb" "${common[@]}" \
    --srun-mpi none --overcommit --poll 0.3 >"$work/sb2.out" 2>"$work/sb2.err"
  expect_rc $? 0 "sbatch resume"
  expect_grep "$work/sb2.out" '^scaling_study: keeping point r4_n1: 1 finished run from before' "sbatch resume keeps r4_n1"
  expect_grep "$work/sb2.out" '^scaling_study: \[r2_n1 run 2\] job [0-9]+: srun ' "sbatch resume reruns r2_n1"
  [ "$(grep -c '\] job [0-9]' "$work/sb2.out")" -eq 1 ] || fail "sbatch resume submitted more than one job"
  expect_grep "$work/sb/results.csv" '^2,1,64,128,10,1800\.0000,' "sbatch resume: 2-rank row"
  expect_grep "$work/sb/results.csv" '^4,1,64,256,10,3240\.0000,' "sbatch resume: 4-rank row kept"
  # A job of an earlier, interrupted run still in the queue: refused, nothing submitted.
  blocker=$(sbatch --parsable --overcommit --wrap 'sleep 30' --output=/dev/null)
  mkdir "$work/sb/points/r8_n1"
  printf '{"point": "r8_n1", "run": 1, "job": "%s"}\n' "$blocker" >"$work/sb/points/r8_n1/point.json"
  "$study" "$work/weak.ini" --mode sbatch --out "$work/sb" --ranks 8 "${common[@]}" \
    --srun-mpi none --overcommit --poll 0.3 >"$work/sb3.out" 2>"$work/sb3.err"
  expect_rc $? 2 "earlier job still queued"
  expect_grep "$work/sb3.err" "^scaling_study: error: job $blocker of point r8_n1 .* is still (PENDING|RUNNING|CONFIGURING)" "queued job named"
  scancel "$blocker"
  for _ in $(seq 50); do [ -n "$(squeue -h 2>/dev/null)" ] || break; sleep 0.2; done
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
elif [ "$mode" = rerun ]; then
  # The report: rerunning a study into its folder failed every point ('the output already holds
  # a run'), then wrote an empty table over results.md / results.csv and deleted scaling.png.
  csv=$work/re/results.csv md=$work/re/results.md
  study_into_re() {  # LOG [ARGS...]: the 1- and 2-rank weak study into $work/re
    local log=$1; shift
    "$study" "$work/weak.ini" --mode mpirun --out "$work/re" --ranks 1,2 "${common[@]}" "$@" \
      >"$log.out" 2>"$log.err"
  }
  png_sum() { md5sum <"$work/re/scaling.png" 2>/dev/null; }
  study_into_re "$work/re1"
  expect_rc $? 0 "first study"
  # The same command again: both points kept, nothing run, the rows and the plot still there.
  study_into_re "$work/re2"
  expect_rc $? 0 "rerun"
  for p in r1_n1 r2_n1; do
    expect_grep "$work/re2.out" "^scaling_study: keeping point $p: 1 finished run from before \\(points/$p\\); not run again\$" "rerun keeps $p"
  done
  expect_no_grep "$work/re2.out" 'mpirun -np' "rerun ran nothing"
  [ ! -e "$work/re/points/r1_n1_run2" ] || fail "rerun made a new run folder"
  expect_grep "$csv" '^1,1,64,64,10,1000\.0000,1\.0000,' "rerun: 1-rank row"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,1\.8000,2\.0000,0\.9000,' "rerun: 2-rank row"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \| 1\.80 \| 90% \|' "rerun: md row"
  expect_png "$work/re/scaling.png"
  # A rerun whose new runs fail (a second run of each point; 2 ranks fail) and whose plot cannot
  # be drawn (a gnuplot that fails): the earlier success, results.md and scaling.png stay.
  before=$(png_sum)
  mkdir -p "$work/bin"
  printf '#!/bin/sh\necho "gnuplot: broken" >&2\nexit 1\n' >"$work/bin/gnuplot"
  chmod +x "$work/bin/gnuplot"
  PATH="$work/bin:$PATH" FAKE_TRAINER_FAIL_RANKS=2 study_into_re "$work/re3" --repeat 2
  expect_rc $? 1 "rerun with a failing run"
  expect_grep "$work/re3.err" 'point r2_n1 \(2 ranks, 1 nodes\), run 2 failed: exit status 1' "failed run named"
  expect_grep "$work/re3.err" 'gnuplot failed \(the earlier scaling\.png is kept\)' "plot kept named"
  [ "$(png_sum)" = "$before" ] || fail "scaling.png changed or went when gnuplot failed"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,.*,1,1800\.0000,1800\.0000,1800\.0000,' "2-rank success kept after a failed run"
  expect_grep "$csv" '^1,1,64,64,10,1000\.0000,.*,2,1000\.0000,1000\.0000,1000\.0000;1000\.0000,' "1 rank: 2 runs"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \| 1\.80 \| 90% \|' "md 2-rank row kept"
  expect_grep "$md" '^- r2_n1 \(2 ranks, 1 nodes\), run 2: exit status 1' "failed run listed"
  expect_grep "$work/re/points/r2_n1_run2/point.json" '"status": "failed: exit status 1"' "failure recorded"
  # Resuming retries the missing run in a new folder; the failed run's folder stays.
  study_into_re "$work/re4" --repeat 2
  expect_rc $? 0 "resume after a failed run"
  expect_grep "$work/re4.out" '^scaling_study: keeping point r1_n1: 2 finished runs from before \(points/r1_n1, points/r1_n1_run2\); not run again$' "resume keeps both runs"
  expect_grep "$work/re4.out" '^scaling_study: \[r2_n1 run 3\] mpirun -np 2 ' "retry in a new folder"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,.*,2,1800\.0000,1800\.0000,1800\.0000;1800\.0000,' "2 ranks: 2 runs"
  [ -f "$work/re/points/r2_n1_run2/run.log" ] || fail "the failed run's log went"
  expect_png "$work/re/scaling.png"
  # Other settings into the same folder: one line, exit 2, nothing run or rewritten.
  cp "$csv" "$work/re.csv"
  study_into_re "$work/re5" --overrides=--train.max_steps=20
  expect_rc $? 2 "other settings"
  [ "$(wc -l <"$work/re5.err")" -eq 1 ] || fail "other settings: not one line: $(cat "$work/re5.err")"
  expect_grep "$work/re5.err" "^scaling_study: error: points/r1_n1 in .* was run with other settings \(overrides '--train.max_steps=10 --train.epochs=1' then, '--train.max_steps=20' now\)" "other settings named"
  cmp -s "$csv" "$work/re.csv" || fail "other settings: results.csv changed"
  # No finished run left at all (summaries gone) and the new run fails: the table stays.
  cp -r "$work/re" "$work/guard"
  rm "$work/guard"/points/*/summary.json
  FAKE_TRAINER_FAIL_RANKS=1 "$study" "$work/weak.ini" --mode mpirun --out "$work/guard" --ranks 1 \
    "${common[@]}" >"$work/guard.out" 2>"$work/guard.err"
  expect_rc $? 1 "no finished run"
  expect_grep "$work/guard.err" '^scaling_study: no point has a finished run; .*results\.md, results\.csv and scaling\.png left as they were$' "empty table not written"
  cmp -s "$work/guard/results.csv" "$work/re.csv" || fail "results.csv replaced by an empty table"
  expect_grep "$work/guard/results.md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 ' "results.md rows kept"
  # A simulated table is not written over real runs.
  "$study" "$work/weak.ini" --simulate ib_fattree --summary "$work/re/points/r1_n1/summary.json" \
    --out "$work/re" >"$work/re6.out" 2>&1
  expect_rc $? 2 "--simulate into a folder of real runs"
  cmp -s "$csv" "$work/re.csv" || fail "--simulate: results.csv changed"
elif [ "$mode" = repeat ]; then
  # Successive runs with the same rank count report 1.4x, 1x, 0.9x the figure: the medians
  # (1000, 1800) are neither the first, the last nor the mean; efficiency 90% from the medians.
  export FAKE_TRAINER_FACTORS=1.4,1,0.9 FAKE_TRAINER_COUNT_DIR=$work/counts
  mkdir -p "$FAKE_TRAINER_COUNT_DIR"
  csv=$work/rep/results.csv md=$work/rep/results.md
  "$study" "$work/weak.ini" --mode mpirun --out "$work/rep" --ranks 1,2 --repeat 3 "${common[@]}" \
    >"$work/rep.out" 2>"$work/rep.err"
  expect_rc $? 0 "--repeat 3"
  expect_grep "$csv" '^1,1,64,64,10,1000\.0000,1\.0000,1\.0000,1\.0000,.*,3,900\.0000,1400\.0000,1400\.0000;1000\.0000;900\.0000,' "1 rank: median, spread, every run"
  expect_grep "$csv" '^2,1,64,128,10,1800\.0000,1\.8000,2\.0000,0\.9000,.*,3,1620\.0000,2520\.0000,2520\.0000;1800\.0000;1620\.0000,' "2 ranks: median, spread, every run"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| 64 \| 128 \| 1800\.0 \(1620\.0–2520\.0\) \| 1\.80 \| 90% \| 71\.11 \| .* \| 3 \| [^|]* \|$' "md median row"
  for d in r2_n1 r2_n1_run2 r2_n1_run3; do
    [ -f "$work/rep/points/$d/summary.json" ] || fail "--repeat 3: no $d/summary.json"
  done
  # The points take turns: each once, then each again.
  order=$(grep -o '^scaling_study: \[[^]]*\]' "$work/rep.out" | tr -d '\n')
  [ "$order" = "scaling_study: [r1_n1]scaling_study: [r2_n1]scaling_study: [r1_n1 run 2]scaling_study: [r2_n1 run 2]scaling_study: [r1_n1 run 3]scaling_study: [r2_n1 run 3]" ] ||
    fail "--repeat 3 ran in the order $order"
  # A larger --repeat on a finished study adds the missing runs.
  rm -f "$FAKE_TRAINER_COUNT_DIR"/*
  "$study" "$work/weak.ini" --mode mpirun --out "$work/add" --ranks 1 "${common[@]}" >"$work/add1.out" 2>&1
  expect_rc $? 0 "one run"
  "$study" "$work/weak.ini" --mode mpirun --out "$work/add" --ranks 1 --repeat 3 "${common[@]}" \
    >"$work/add2.out" 2>&1
  expect_rc $? 0 "--repeat 3 after one run"
  expect_grep "$work/add2.out" '^scaling_study: keeping point r1_n1: 1 finished run from before \(points/r1_n1\); 2 more runs to go$' "repeat: first run kept"
  expect_grep "$work/add/results.csv" '^1,1,64,64,10,1000\.0000,.*,3,900\.0000,1400\.0000,1400\.0000;1000\.0000;900\.0000,' "repeat added to the kept run"
  # A bad --repeat: one line, exit 2, nothing run.
  for bad in 0 -1 two 1.5 ''; do
    "$study" "$work/weak.ini" --mode mpirun --out "$work/bad" --repeat="$bad" "${common[@]}" \
      >"$work/bad.out" 2>"$work/bad.err"
    expect_rc $? 2 "--repeat '$bad'"
    [ "$(wc -l <"$work/bad.err")" -eq 1 ] || fail "--repeat '$bad': not one line: $(cat "$work/bad.err")"
    expect_grep "$work/bad.err" "^scaling_study: error: --repeat '$bad': expected an integer >= 1" "--repeat '$bad' named"
    [ ! -e "$work/bad" ] || fail "--repeat '$bad' made $work/bad"
  done
elif [ "$mode" = oversubscribed ]; then
  # The driver and mpirun on one CPU: 2 ranks on 1 core, and a rank of 2 threads on 1 core.
  cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
  csv=$work/ov/results.csv md=$work/ov/results.md
  taskset -c "$cpu" "$study" "$work/weak.ini" --mode mpirun --out "$work/ov" --ranks 1,2 \
    "${common[@]}" >"$work/ov.out" 2>"$work/ov.err"
  expect_rc $? 0 "study on one CPU"
  expect_grep "$work/ov.out" '^scaling_study: note: point r2_n1 is oversubscribed: 2 ranks on 1 core' "note before the run"
  expect_grep "$md" '^\| 1 \| 1 \| 1 \| 1 \| 1 \| .* \| 1 \|  \|$' "1 rank on 1 core not marked"
  expect_grep "$md" '^\| 2 \| 1 \| 1 \| 1 \| 2 \| .* \| 90% \| .* \| 1 \| oversubscribed: 2 ranks on 1 core \|$' "2 ranks on 1 core marked"
  expect_grep "$md" '^Oversubscribed points: .*not how the training scales' "report text"
  expect_grep "$md" '^- 2 ranks, 1 nodes: oversubscribed: 2 ranks on 1 core \(efficiency 90%\)$' "report lists the point"
  expect_grep "$csv" '^1,1,.*,1,$' "csv: 1 rank, 1 core"
  expect_grep "$csv" '^2,1,.*,1,oversubscribed: 2 ranks on 1 core$' "csv: 2 ranks marked"
  taskset -c "$cpu" "$study" "$work/weak.ini" --mode mpirun --out "$work/ovt" --ranks 1 \
    --overrides="--train.max_steps=10 --train.threads=2" "${common[@]}" >"$work/ovt.out" 2>&1
  expect_rc $? 0 "2 threads on one CPU"
  expect_grep "$work/ovt/results.md" '\| oversubscribed: 1 rank x 2 threads on 1 core \|$' "threads counted"
else
  echo "usage: $0 mpirun|sbatch|sbatch_nodes|rerun|repeat|oversubscribed" >&2
  exit 2
fi

if [ $failures -ne 0 ]; then
  echo "scaling_study_test $mode: $failures check(s) failed; outputs:" >&2
  for f in "$work"/*.out "$work"/*.err "$work"/*/points/*/run.log; do
    [ -s "$f" ] && { echo "== $f" >&2; tail -30 "$f" >&2; }
  done
  exit 1
fi
echo "scaling_study_test $mode: all checks passed"
