#!/usr/bin/env bash
# run_fuzzers.sh [SECONDS]: builds the libFuzzer targets with clang in build-fuzz/ and runs each
# for SECONDS (default 20), seeded with the TFRecord fixtures. Exit 0 when no target found a
# crash; crash inputs are left in build-fuzz/fuzz-artifacts/.
set -eu
seconds=${1:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
fixtures=$root/tests/fixtures/tfrecord
san="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSHARDFLOW_FUZZ=ON -DSHARDFLOW_CUDA=OFF \
  -DSHARDFLOW_UNIT_TESTS_ONLY=ON "-DCMAKE_CXX_FLAGS=$san" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
ninja -C "$build" -j2 fuzz_tfrecord_reader fuzz_example_parser
corpus=$build/fuzz-corpus artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
rm -rf "$corpus"; mkdir -p "$corpus/reader" "$corpus/example"
# Seeds: each fixture as a plain/gzip/zlib reader input (first byte = mode), and the Examples
# inside the plain fixtures for the parser.
i=0
for f in "$fixtures"/*.tfrecord "$fixtures"/*.gz "$fixtures"/*.zlib; do
  [ -f "$f" ] || continue
  case "$f" in *.gz) mode='\001' ;; *.zlib) mode='\002' ;; *) mode='\000' ;; esac
  { printf "$mode"; head -c 65536 "$f"; } > "$corpus/reader/seed$i"; i=$((i + 1))
  { printf '\004'; head -c 65536 "$f"; } > "$corpus/reader/seed$i"; i=$((i + 1))
done
[ "$i" -gt 0 ] || { echo "run_fuzzers: no TFRecord fixtures to seed from in $fixtures"; exit 1; }
/usr/bin/python3 - "$fixtures" "$corpus/example" <<'PY'
import glob, os, struct, sys
n = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.tfrecord"))):
    data, pos = open(path, "rb").read(), 0
    while pos + 12 <= len(data) and n < 64:
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        open(os.path.join(sys.argv[2], "ex%d" % n), "wb").write(data[pos + 12:pos + 12 + length])
        pos += 16 + length
        n += 1
PY
status=0
for target in fuzz_tfrecord_reader fuzz_example_parser; do
  dir=$corpus/reader; [ $target = fuzz_example_parser ] && dir=$corpus/example
  echo "== $target for ${seconds}s"
  if ! "$build/bin/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=200000 \
       -artifact_prefix="$artifacts/$target-" -print_final_stats=1 "$dir" 2>"$build/$target.log"; then
    echo "FAILED: $target found a crash (see $build/$target.log and $artifacts)"; tail -30 "$build/$target.log"
    status=1
  else
    grep -E "^(stat::number_of_executed_units|Done)" "$build/$target.log" || tail -2 "$build/$target.log"
  fi
done
exit $status
