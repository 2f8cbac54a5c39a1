#!/usr/bin/env bash
# GPT-style language-model training against PyTorch (issue 50), not CI: the same model (nanoGPT's
# character-level Shakespeare configuration by default: 6 pre-LN blocks, 384 features, 6 heads,
# 256-token context, 65 symbols; 10.8M parameters), the same step (forward, next-token
# cross-entropy, backward, Adam) on random token ids, on the same cores and thread counts.
#   bench/transformer.sh [--reps 3] [--threads 1,2] [--batch 8] [--steps 5] [--bin DIR]
#                        [-- extra flags for both, e.g. --layers 4 --dim 256 --heads 4]
# Per repetition and thread count T the two run one after another under `taskset -c 0..T-1`,
# the order alternating between repetitions; the 1-minute load average before each run is
# recorded. Prints every run, then per T the median tokens/s of each and the ratio.
#   shardflow  shardflow-bench transformer --json
#   torch      bench/peers/torch_transformer.py (bench/peers/run_torch_peer.sh makes its venv)
# And the attention memory at T = 512, 1024, 2048 (shardflow-bench transformer --memory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin reps=3 threads=1,2 batch=8 steps=5 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "transformer.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
echo "transformer.sh: $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "reps $reps, threads $threads, batch $batch, steps $steps ${extra[*]:-}"
grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' '
echo

run_one() {  # run_one CONTENDER T: one run, its JSON line appended to $runs
  local who=$1 t=$2 cores load line
  cores=0-$(($2 - 1))
  load=$(cut -d' ' -f1 /proc/loadavg)
  local common=(--threads "$t" --batch "$batch" --steps "$steps" "${extra[@]}")
  case "$who" in
    shardflow)
      line=$(taskset -c "$cores" "$bin/shardflow-bench" transformer "${common[@]}" --json |
        grep '^{') ;;
    torch)
      line=$(taskset -c "$cores" "$here/peers/run_torch_peer.sh" --script torch_transformer.py \
        "${common[@]}" | grep '^{') ;;
  esac
  echo "$who threads $t load $load: $line"
  /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d.update(who=sys.argv[2], load=float(sys.argv[3]), threads=int(sys.argv[4])); print(json.dumps(d))' \
    "$line" "$who" "$load" "$t" >>"$runs"
}

IFS=, read -r -a thread_list <<<"$threads"
contenders=(shardflow torch)
for ((rep = 0; rep < reps; rep++)); do
  for t in "${thread_list[@]}"; do
    for ((k = 0; k < 2; k++)); do run_one "${contenders[$(((k + rep) % 2))]}" "$t"; done
  done
done

/usr/bin/python3 - "$runs" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(who, t):
    v = [r["tokens_per_s"] for r in runs if r["who"] == who and r["threads"] == t]
    return statistics.median(v) if v else None
print("\nmedians, training tokens/s")
for t in sorted({r["threads"] for r in runs}):
    ours, theirs = med("shardflow", t), med("torch", t)
    print(f"threads {t}: shardflow {ours:.0f}, torch {theirs:.0f}, shardflow/torch {ours / theirs:.2f}x")
loads = [r["load"] for r in runs]
print(f"load average before the runs: {min(loads):.2f}-{max(loads):.2f}")
PY
echo
for t in 512 1024 2048; do
  "$bin/shardflow-bench" transformer --memory "${extra[@]}" --time "$t"
done
