#!/usr/bin/env bash
# Process-level tests of shardflow-convert under mpiexec, checked by convert_check.py
# (numpy/h5py, run with /usr/bin/python3: Debian's python3-h5py/numpy live there).
#   convert_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE: idx | idx-h5 | csv | h5-input   (see each case below)
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
check="$py $here/convert_check.py"
fm=/usr/share/datasets/fashion-mnist

convert() {  # convert NP ARGS...
  local np=$1
  shift
  "${mpi[@]}" -np "$np" "$bin/shardflow-convert" "$@" >"convert.np$np.log" 2>&1 ||
    { echo "shardflow-convert -np $np $* failed:"; cat "convert.np$np.log"; exit 1; }
}

same_files() {  # same_files DIR_A DIR_B: the same file names, byte-identical
  local a=$1 b=$2
  diff <(cd "$a" && ls) <(cd "$b" && ls) || { echo "file lists differ: $a $b"; exit 1; }
  for f in "$a"/*; do cmp "$f" "$b/$(basename "$f")" || exit 1; done
  echo "identical: $a $b ($(ls "$a" | wc -l) files)"
}

case "$mode" in
idx)
  # Fashion-MNIST test split, first 1000, 8 shards: np 1, 2, 3 give byte-identical shards;
  # the shards' stats match the IDX sums. Then gzip shards, and more shards than records.
  for np in 1 2 3; do
    convert $np --input.split=test --input.limit=1000 --output.shards=8 --output.path=np$np/fm
  done
  same_files np1 np2
  same_files np1 np3
  "$bin/shardflow-inspect" verify np1/*.tfrecord
  "$bin/shardflow-inspect" stats --json np1/*.tfrecord >stats.json
  $check idx-sums $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 1000 stats.json
  for np in 1 3; do
    convert $np --input.split=test --input.limit=999 --output.shards=4 --output.compression=gzip \
      --output.path=gz$np/fm
    convert $np --input.split=test --input.limit=5 --output.shards=8 --output.path=tiny$np/fm
  done
  same_files gz1 gz3
  same_files tiny1 tiny3
  # Standardized (statistics all-reduced per shard block): still byte-identical.
  for np in 1 2 3; do
    convert $np --input.split=test --input.limit=1000 --output.shards=5 \
      --preprocess.normalize=standardize --output.path=std$np/fm
  done
  same_files std1 std2
  same_files std1 std3
  ls gz1/fm-00003-of-00004.tfrecord.gz >/dev/null
  "$bin/shardflow-inspect" stats --json gz1/*.gz >gzstats.json
  $check idx-sums $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 999 gzstats.json
  "$bin/shardflow-inspect" stats --json tiny1/*.tfrecord >tinystats.json
  $check idx-sums $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 5 tinystats.json
  ;;
idx-h5)
  # One HDF5 file written collectively, read back by h5py: raw, scaled and standardized.
  convert 2 --input.split=test --input.limit=1000 --output.format=hdf5 --output.path=raw.h5
  $check idx-h5 $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 1000 raw.h5 none
  "$bin/shardflow-inspect" verify raw.h5 | grep -q "raw.h5: ok, 3 datasets, 800000 bytes$"
  convert 3 --input.split=test --input.limit=777 --preprocess.normalize=scale \
    --output.format=hdf5 --output.compression=gzip --output.path=scaled.h5
  $check idx-h5 $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 777 scaled.h5 scale
  convert 3 --input.split=test --input.limit=1000 --preprocess.normalize=standardize \
    --output.format=hdf5 --output.path=std.h5
  $check idx-h5 $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz 1000 std.h5 standardize
  # Issue 27.10: byte-identical HDF5 files for any number of ranks, run after run (no object
  # timestamps; the same storage allocation serial and parallel), raw and gzip-compressed.
  for gz in none gzip; do
    for run in 1a 1b 3; do
      [ $run = 1b ] && sleep 1.1  # a timestamp would differ by now
      convert "${run%[ab]}" --input.split=test --input.limit=500 --output.format=hdf5 \
        --output.compression=$gz --output.path=same-$gz-$run.h5
    done
    cmp same-$gz-1a.h5 same-$gz-1b.h5 || { echo "two 1-rank HDF5 conversions differ ($gz)"; exit 1; }
    cmp same-$gz-1a.h5 same-$gz-3.h5 || { echo "1 and 3 ranks give different HDF5 files ($gz)"; exit 1; }
  done
  ;;
csv)
  # Ragged sensor series (some shorter than the window): standardized windows, byte-identical
  # shards for np 1, 2, 3, and the HDF5 output against a naive numpy reference.
  $py "$src/scripts/make_sensor_csv.py" --out sensors --assets 9 --steps 120 --channels 3 \
    --steps-jitter 100 --seed 7
  args=(--input.format=csv --input.path=sensors --preprocess.window=24 --preprocess.stride=5
        --preprocess.normalize=standardize --output.shards=5)
  for np in 1 2 3; do convert $np "${args[@]}" --output.path=np$np/w; done
  same_files np1 np2
  same_files np1 np3
  "$bin/shardflow-inspect" stats --json np1/*.tfrecord >stats.json
  convert 2 "${args[@]}" --output.format=hdf5 --output.path=w.h5
  $check windows sensors 24 5 standardize -1 w.h5 stats.json
  convert 3 --input.format=csv --input.path=sensors --preprocess.window=10 --preprocess.stride=3 \
    --preprocess.normalize=scale --input.limit=50 --output.format=hdf5 --output.path=s.h5
  $check windows sensors 10 3 scale 50 s.h5
  convert 1 --input.format=csv --input.path=sensors --preprocess.window=16 \
    --output.format=hdf5 --output.path=n.h5
  $check windows sensors 16 1 none -1 n.h5
  # Window 30: assets 0, 2, 4 and 6 (24-28 steps) give no window and so stay out of the
  # statistics, though later assets give windows (issue 28, item 5).
  convert 2 --input.format=csv --input.path=sensors --preprocess.window=30 --preprocess.stride=4 \
    --preprocess.normalize=standardize --output.format=hdf5 --output.path=short-std.h5
  $check windows sensors 30 4 standardize -1 short-std.h5
  convert 3 --input.format=csv --input.path=sensors --preprocess.window=30 --preprocess.stride=4 \
    --preprocess.normalize=scale --input.limit=20 --output.format=hdf5 --output.path=short-scale.h5
  $check windows sensors 30 4 scale 20 short-scale.h5
  ;;
h5-input)
  # HDF5 inputs (fixtures written by h5py): images+labels to shards, series to windows.
  fx=$src/tests/fixtures/hdf5
  for np in 1 2; do
    convert $np --input.format=hdf5 --input.path=$fx/fmnist-test-1000.h5 \
      --input.datasets=images,labels --output.shards=3 --output.path=np$np/fm
  done
  same_files np1 np2
  "$bin/shardflow-inspect" stats --json np1/*.tfrecord >stats.json
  $py - stats.json "$fx/hdf5.manifest.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["features"]
m = json.load(open(sys.argv[2]))["fmnist-test-1000.h5"]
assert st["image_raw"]["byte_sum"] == m["images"]["sum"], (st["image_raw"], m["images"])
assert int(st["label"]["sum"]) == m["labels"]["sum"], (st["label"], m["labels"])
assert int(st["id"]["sum"]) == m["ids"]["sum"]
print("convert_check: ok, HDF5 images -> shards match the manifest")
PY
  convert 2 --input.format=hdf5 --input.kind=series --input.path=$fx/sensors-48x128x6.h5 \
    --input.datasets=series --preprocess.window=128 --output.format=hdf5 --output.path=s.h5
  want=$($py -c "import json;print(json.load(open('$fx/hdf5.manifest.json'))['sensors-48x128x6.h5']['series']['sum'])")
  $check h5-sums s.h5 windows=$want asset_ids=1128 starts=0 ids=1128
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "convert_runs.sh $mode: ok"
