#!/usr/bin/env bash
# make_damaged.sh FIXTURES_DIR OUT_DIR: damaged copies of TFRecord fixtures for the
# shardflow-inspect process tests (exact offsets are asserted in tests/io/CMakeLists.txt).
set -eu
src=$1/tfrecord out=$2
mkdir -p "$out"
shard=$src/fmnist-test-00000-of-00002.tfrecord
# Each fmnist record here is 873 bytes of framing + data (record 3 starts at 3*873 = 2619).
cp "$shard" "$out/flipped-data.tfrecord"
printf '\xee' | dd of="$out/flipped-data.tfrecord" bs=1 seek=$((2619 + 100)) conv=notrunc status=none
cp "$shard" "$out/flipped-length.tfrecord"
printf '\x07' | dd of="$out/flipped-length.tfrecord" bs=1 seek=$((2619 + 1)) conv=notrunc status=none
head -c $((873 * 10 + 5)) "$shard" > "$out/truncated-header.tfrecord"
head -c $((873 * 10 + 400)) "$shard" > "$out/truncated-data.tfrecord"
head -c 100000 "$src/fmnist-test-00000-of-00002.tfrecord.gz" > "$out/cut.tfrecord.gz"
: > "$out/empty.tfrecord"
