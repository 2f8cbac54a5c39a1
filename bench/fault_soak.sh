#!/usr/bin/env bash
# Fault soak of shardflow-train (issue 16; not CI): N short runs, each with a random fault at a
# random step, then a `--resume=auto` run of the same output. Every faulty run must end within its
# bound with its documented status; every resume must finish the run (never load a damaged
# checkpoint: a damaged newest one is skipped with a warning naming it).
#   bench/fault_soak.sh [--runs N] [--seed S] [--bin DIR] [--work DIR] [--dynamic | --static-ps]
# (--dynamic: every run a parameter-server run with dynamic sharding; --static-ps: every run a
# parameter-server run with static sharding)
# Faults (SHARDFLOW_TEST_FAULT unless said): none; kill:R:S (a rank dies: non-zero, not 75);
# kill_allreduce:R:S (a rank dies inside the gradient all-reduce; data-parallel only); hang:R:S
# (a rank stops: the watchdog, 4 s, ends the job non-zero); term:all:S and usr1:R:S (a stop: exit
# 75 and a checkpoint); truncate (a stop, then the newest checkpoint cut to half its bytes before
# the resume); enospc (SHARDFLOW_TEST_CHECKPOINT_FAULT=enospc:N: the N-th checkpoint's write
# fails as a full disk: exit 1). Strategies: data_parallel on 2 ranks, or parameter_server on 3
# (half of them with dist.sharding = dynamic; static or dynamic, resumed on 1-3 workers one
# time in two).
# A data-parallel run is resumed on a random rank count (1-4) one time in two: an elastic resume.
# Every resume must finish all 3 epochs, and no record may be trained twice in an epoch (the
# ranks' record-id logs, SHARDFLOW_TEST_ROW_IDS, of the faulty run up to the checkpoint resumed
# from and of the resume, tests/train/check_row_ids.py).
# Prints one line per run and a summary: runs, outcomes, hangs (a run past its bound), exit
# statuses other than documented, resumes that failed; exits 1 if any of them. A step fault a
# dynamic-sharding worker never reached (it claimed fewer steps) shows as KIND-not-reached.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=200 seed=1 bin=$here/build/bin work=/tmp/shardflow-soak dynamic=0 static_ps=0
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --dynamic) dynamic=1; shift ;;
    --static-ps) static_ps=1; shift ;;
    *) echo "fault_soak.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe)
export OMPI_MCA_mpi_yield_when_idle=1 SHARDFLOW_THREADS=1
rm -rf "$work"; mkdir -p "$work/bin"; cd "$work"
# Copies of the programs: a rebuild of the checkout during the soak must not change them.
cp "$bin/shardflow-train" "$bin/shardflow-convert" bin/
bin=$work/bin
"${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=1200 --output.shards=3 --output.path=data/fm --log.level=warn >/dev/null
# 1200 records / 2 workers / batch 32: 19 steps an epoch, 3 epochs: 57 steps; a checkpoint
# every 7 steps (and at the stop).
common=(--config "$here/configs/fmnist_mlp.ini" --no-progress --train.threads=1
        --data.files='data/fm-*.tfrecord' --eval.files= --train.batch_size=32 --train.epochs=3
        --checkpoint.every_steps=7 --checkpoint.keep_last=0 --dist.watchdog_seconds=4
        --data.parallel_reads=1 --data.parallel_calls=1)
RANDOM=$seed
declare -A outcomes=()
hangs=0 bad_resumes=0 wrong=0
for ((i = 0; i < runs; i++)); do
  kinds=(none kill kill_allreduce hang term usr1 truncate enospc)
  kind=${kinds[RANDOM % ${#kinds[@]}]}
  step=$((RANDOM % 50))
  np=2 strategy=()
  if ((RANDOM % 4 == 0)); then np=3 strategy=(--dist.strategy=parameter_server); fi
  # Half the parameter-server runs with dynamic sharding (issue 14), resumed on 1-3 workers.
  # (per-worker batch kept: a resume on another worker count claims batches of the same size)
  if [ $((dynamic + static_ps)) -gt 0 ] && [ "$kind" = kill_allreduce ]; then kind=kill; fi
  if [ $((dynamic + static_ps)) -gt 0 ]; then np=3 strategy=(--dist.strategy=parameter_server); fi
  if [ $np = 3 ] && [ $static_ps = 0 ] && ((dynamic == 1 || RANDOM % 2 == 0)); then
    strategy+=(--dist.sharding=dynamic --train.batch_semantics=per_rank --train.batch_size=16)
  fi
  [ "$kind" = kill_allreduce ] && np=2 strategy=()
  rank=$((RANDOM % 2))  # a worker: a server takes no steps, so a step fault never reaches it
  np2=$np
  if [ $np = 2 ] && ((RANDOM % 2 == 0)); then np2=$((1 + RANDOM % 4)); fi
  if [ $np = 3 ] && ((RANDOM % 2 == 0)); then np2=$((2 + RANDOM % 3)); fi
  ckpt_fault=
  case $kind in
    none) fault="" ;;
    kill) fault=kill:$rank:$step ;;
    kill_allreduce) fault=kill_allreduce:$rank:$step ;;
    enospc) fault="" ckpt_fault=enospc:$((1 + RANDOM % 7)) ;;
    hang) fault=hang:$rank:$step ;;
    term|truncate) fault=term:all:$step ;;
    usr1) fault=usr1:$rank:$step ;;
  esac
  rm -rf out ids_a.* ids_b.*
  start=$(date +%s.%N)
  rc=0
  SHARDFLOW_TEST_ROW_IDS=ids_a SHARDFLOW_TEST_CHECKPOINT_FAULT=$ckpt_fault \
  SHARDFLOW_TEST_FAULT=$fault timeout -k 5 60 "${mpi[@]}" -np $np "$bin/shardflow-train" \
    "${common[@]}" "${strategy[@]}" --output out >run.log 2>&1 || rc=$?
  took=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
  hung=0
  # A hang the watchdog (4 s) must end; 30 s is the bound for any run here.
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 -a "$kind" != kill -a "$kind" != kill_allreduce ] ||
     python3 -c "import sys; sys.exit(0 if $took > 30 else 1)"; then
    hung=1; hangs=$((hangs + 1))
  fi
  expected=ok
  # Under dynamic sharding a worker's step count is not known in advance (a slower worker claims
  # fewer batches), so a step fault may never fire: a clean finish without the fault's log line
  # is right then.
  if [ $rc -eq 0 ] && [ -n "$fault" ] && ! grep -q "SHARDFLOW_TEST_FAULT" run.log; then
    kind=$kind-not-reached
  fi
  case $kind in
    *-not-reached) ;;
    none) [ $rc -eq 0 ] || expected=WRONG ;;
    kill|kill_allreduce|hang) [ $rc -ne 0 ] && [ $rc -ne 75 ] || expected=WRONG ;;
    enospc) [ $rc -eq 1 ] || [ $rc -eq 0 ] || expected=WRONG ;;  # 0: fewer checkpoints than N
    term|usr1|truncate) [ $rc -eq 75 ] || [ $rc -eq 0 ] || expected=WRONG ;;  # 0: signal after the last step
  esac
  [ "$expected" = WRONG ] && wrong=$((wrong + 1))
  damaged=""
  if [ "$kind" = truncate ] && ls out/checkpoints/ckpt-*.h5 >/dev/null 2>&1; then
    damaged=$(ls out/checkpoints/ckpt-*.h5 | tail -1)
    truncate -s $(( $(stat -c %s "$damaged") / 2 )) "$damaged"
  fi
  rrc=0
  SHARDFLOW_TEST_ROW_IDS=ids_b timeout -k 5 60 "${mpi[@]}" -np $np2 "$bin/shardflow-train" \
    "${common[@]}" "${strategy[@]}" --output out --resume=auto >resume.log 2>&1 || rrc=$?
  resumed=ok
  # The faulty run's batches up to the checkpoint the resume continued from (later ones were
  # lost with it), then the resume's: every epoch done, no record twice in one.
  from=$(sed -n 's/.*resuming from .* at step \([0-9]*\)$/\1/p' resume.log | head -1)
  grep -q "the run is complete" resume.log && from=999999
  for f in ids_a.rank*; do
    [ -f "$f" ] && awk -v s="${from:-0}" '$2 < s' "$f" >"$f.kept" && mv "$f.kept" "$f"
  done
  if [ $rrc -ne 0 ] || ! python3 -c "import json,sys; s=json.load(open('out/summary.json')); sys.exit(0 if s['epochs']==3 else 1)" 2>/dev/null ||
     ! python3 "$here/tests/train/check_row_ids.py" 0 3 0 -1 ids_a ids_b >ids.log 2>&1; then
    resumed=FAILED; bad_resumes=$((bad_resumes + 1))
    cp run.log "fail-$i-run.log"; cp resume.log "fail-$i-resume.log"; cp ids.log "fail-$i-ids.log"
  fi
  if [ -n "$damaged" ] && ! grep -q "$(basename "$damaged")" resume.log; then
    resumed="$resumed (no warning naming $(basename "$damaged"))"
    bad_resumes=$((bad_resumes + 1))
  fi
  key="$kind:$rc"
  outcomes[$key]=$(( ${outcomes[$key]:-0} + 1 ))
  echo "run $i: ${strategy[*]:-data_parallel} np $np fault '${fault:-${ckpt_fault:-none}}'${damaged:+ + truncated newest} -> exit $rc in ${took}s ($expected$([ $hung = 1 ] && echo ', HUNG')); resume on $np2 exit $rrc: $resumed"
done
echo "== $runs runs (seed $seed)"
for key in "${!outcomes[@]}"; do echo "  fault:exit $key  x ${outcomes[$key]}"; done | sort
echo "hangs: $hangs; exit statuses other than documented: $wrong; resumes that failed or loaded a damaged checkpoint silently: $bad_resumes"
[ $hangs -eq 0 ] && [ $wrong -eq 0 ] && [ $bad_resumes -eq 0 ]
