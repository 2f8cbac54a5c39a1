#!/usr/bin/env bash
# Text tokenized in the input pipeline against converted shards (issue 50), not CI: the
# fortunes classifier (configs/text_classifier.ini's model) trained for one epoch on 2 ranks
#   shards     configs/text_classifier.ini: BPE token records made by shardflow-convert
#   jsonl      configs/text_classifier_jsonl.ini with pad_to = max: JSON lines BPE-tokenized in
#              the pipeline, bucketed by length, every batch padded to the 128-token context
#   unbucketed the same without buckets (lengths mixed)
#   short      the config as it is: bucketed, each batch padded to its longest document
#              (pad_to = batch): the model runs on the shorter length
#   short_mixed  the same without buckets (lengths mixed: a batch's longest sets its length)
# interleaved (A, B, C, D, E, then B, C, D, E, A, ...) for --reps repetitions; prints each run's samples/s, input
# wait, held-out accuracy and load average, then the medians and ratios to the shards.
#   bench/text_pipeline.sh [--reps 2] [--epochs 1] [--bin DIR]
# Needs data/fortunes-cls-* (the convert in configs/text_classifier.ini's header) and makes
# data/fortunes-docs-*.jsonl (bench/make_fortunes_jsonl.py) when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin reps=2 epochs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "text_pipeline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
cd "$src"
[ -f data/fortunes-cls.vocab.json ] || {
  echo "text_pipeline.sh: data/fortunes-cls.vocab.json missing: run the convert in configs/text_classifier.ini's header" >&2
  exit 2
}
[ -f data/fortunes-docs-train.jsonl ] || python3 bench/make_fortunes_jsonl.py data/fortunes-docs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "text_pipeline.sh: $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), reps $reps, epochs $epochs"
grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' '
echo
mpi=(mpiexec -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
run_one() {  # run_one NAME: one training run, its figures appended to $work/runs
  local name=$1 load args=()
  load=$(cut -d' ' -f1 /proc/loadavg)
  case "$name" in
    shards) args=(--config configs/text_classifier.ini) ;;
    jsonl) args=(--config configs/text_classifier_jsonl.ini --data.pad_to=max) ;;
    unbucketed) args=(--config configs/text_classifier_jsonl.ini --data.bucket_boundaries=
      --data.bucket_batch_sizes= --data.pad_to=max) ;;
    short) args=(--config configs/text_classifier_jsonl.ini) ;;
    short_mixed) args=(--config configs/text_classifier_jsonl.ini --data.bucket_boundaries=
      --data.bucket_batch_sizes= --data.pad_to=batch) ;;
  esac
  rm -rf "$work/run"
  "${mpi[@]}" "$bin/shardflow-train" "${args[@]}" --train.epochs "$epochs" --output "$work/run" \
    --no-progress >"$work/log" 2>&1 || { tail -5 "$work/log"; exit 1; }
  python3 - "$work/run/summary.json" "$name" "$load" <<'PY' | tee -a "$work/runs"
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"who": sys.argv[2], "load": float(sys.argv[3]),
                  "samples_per_s": round(d["samples_per_s"], 1),
                  "input_wait": round(d["input_wait_fraction"], 4),
                  "accuracy": round(d["test_accuracy"], 4), "steps": d["steps"]}))
PY
}
names=(shards jsonl unbucketed short short_mixed)
for ((rep = 0; rep < reps; rep++)); do
  for ((k = 0; k < 5; k++)); do run_one "${names[$(((k + rep) % 5))]}"; done
done
python3 - "$work/runs" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for who in ("shards", "jsonl", "unbucketed", "short", "short_mixed"):
    mine = [r for r in runs if r["who"] == who]
    med[who] = statistics.median(r["samples_per_s"] for r in mine)
    print(f"{who:11s} median {med[who]:.1f} samples/s, input wait "
          f"{statistics.median(r['input_wait'] for r in mine):.2%}, accuracy "
          f"{statistics.median(r['accuracy'] for r in mine):.4f}")
for who in ("jsonl", "unbucketed", "short", "short_mixed"):
    print(f"{who} / shards: {med[who] / med['shards']:.3f}")
PY
