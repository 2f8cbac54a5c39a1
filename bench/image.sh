#!/usr/bin/env bash
# The image pipeline against tf.data and PyTorch's DataLoader (issue 49), not CI: the
# ImageNet training input (random-resized crop to 224, flip, normalize, batches of 64) on the
# same files, the same cores and the same thread counts.
#   bench/image.sh [--reps 3] [--threads 1,2] [--images 256] [--epochs 2] [--peers tf,torch]
#                  [--source DIR] [--bin DIR] [--work DIR]
# The corpus: `shardflow-bench image --corpus-only` (JPEGs at ImageNet's sizes made from the
# photographs under --source, default Debian's plasma-workspace-wallpapers, and the same bytes
# as TFRecord shards). Per repetition and thread count T, the contenders run one after another
# under `taskset -c 0..T-1`, the order rotating between repetitions; the 1-minute load average
# before each run is recorded.
#   shardflow  shardflow-bench image --threads T --json: the fused pipeline from the TFRecord
#              shards (decode fused into random_resized_crop), and the decode-only rate on the
#              same cores (the libjpeg-turbo ceiling);
#   tf.data    bench/peers/tf_image_pipeline.py on the shards: decode_and_crop_jpeg with
#              sample_distorted_bounding_box, map AUTOTUNE, a private pool of T threads;
#   torch      bench/peers/torch_image_pipeline.py on the JPEG folder: ImageFolder,
#              RandomResizedCrop, RandomHorizontalFlip, ToTensor, Normalize, T workers.
# Prints every run, then per T the medians and the ratios shardflow / tf.data, shardflow /
# torch, and shardflow / (decode-only rate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=$src/build/bin work=/tmp/shardflow-image-corpus reps=3 threads=1,2 images=256 epochs=2
peers=tf,torch source=/usr/share/wallpapers
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "image.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
corpus=(--source "$source" --work "$work" --images "$images")
"$bin/shardflow-bench" image "${corpus[@]}" --corpus-only
runs=$work/runs.jsonl
: >"$runs"
echo "image.sh: $(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "reps $reps, threads $threads, $images images, $epochs epochs, peers $peers"

run_one() {  # run_one CONTENDER T: one run, its JSON line appended to $runs
  local who=$1 t=$2 cores load line
  cores=0-$(($2 - 1))
  load=$(cut -d' ' -f1 /proc/loadavg)
  case "$who" in
    shardflow)
      line=$(taskset -c "$cores" "$bin/shardflow-bench" image "${corpus[@]}" --threads "$t" \
        --epochs "$epochs" --json | grep '^{') ;;
    tf)
      line=$(taskset -c "$cores" "$here/peers/run_tf_peer.sh" --script tf_image_pipeline.py \
        --shards "$work/shards/img-*.tfrecord" --threads "$t" --epochs "$epochs" | grep '^{') ;;
    torch)
      line=$(taskset -c "$cores" "$here/peers/run_torch_peer.sh" --script \
        torch_image_pipeline.py --root "$work/images" --threads "$t" --epochs "$epochs" |
        grep '^{') ;;
  esac
  echo "$who threads $t load $load: $line"
  /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d.update(who=sys.argv[2], load=float(sys.argv[3])); print(json.dumps(d))' \
    "$line" "$who" "$load" >>"$runs"
}

IFS=, read -r -a peer_list <<<"$peers"
IFS=, read -r -a thread_list <<<"$threads"
contenders=(shardflow "${peer_list[@]}")
for ((rep = 0; rep < reps; rep++)); do
  for t in "${thread_list[@]}"; do
    n=${#contenders[@]}
    for ((k = 0; k < n; k++)); do run_one "${contenders[$(((k + rep) % n))]}" "$t"; done
  done
done

/usr/bin/python3 - "$runs" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(who, t, key):
    v = [r[key] for r in runs if r["who"] == who and r["threads"] == t and key in r]
    return statistics.median(v) if v else None
print("\nmedians, images/s (per thread in brackets)")
for t in sorted({r["threads"] for r in runs}):
    ours, decode = med("shardflow", t, "fused_per_s"), med("shardflow", t, "decode_per_s")
    parts = [f"threads {t}: shardflow {ours:.0f} ({ours / t:.0f})", f"decode only {decode:.0f}"]
    for who in ("tf", "torch"):
        theirs = med(who, t, "images_per_s")
        if theirs:
            parts.append(f"{who} {theirs:.0f} ({theirs / t:.0f}), shardflow/{who} {ours / theirs:.2f}x")
    parts.append(f"shardflow/decode only {ours / decode:.2f}")
    print("; ".join(parts))
loads = [r["load"] for r in runs]
print(f"load average before the runs: {min(loads):.2f}-{max(loads):.2f}")
PY
