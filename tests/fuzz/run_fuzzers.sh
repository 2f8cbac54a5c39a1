#!/usr/bin/env bash
# run_fuzzers.sh [SECONDS] | --build-only: builds the libFuzzer targets with clang in build-fuzz/
# (through ccache when it is installed) and runs each one in turn; SECONDS (default 40) is the
# whole run's fuzzing time, split evenly over the targets (at least 3 s each). Each target is
# seeded from its in-tree corpus tests/fuzz/corpus/<target>/ (read only; see its README) and
# writes what it finds to build-fuzz/fuzz-corpus/<target>/; the TFRecord reader and Example
# parser also get seeds cut from the TFRecord fixtures. Exit 0 when no target found a crash, a
# sanitizer report, a leak, an uncaught exception or an input running over 10 s; such inputs are
# left in build-fuzz/fuzz-artifacts/. --build-only builds and exits (bench/fuzz_long.sh uses it).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-fuzz
fixtures=$root/tests/fixtures/tfrecord
targets="fuzz_tfrecord_reader fuzz_example_parser fuzz_json_lines fuzz_csv fuzz_csv_stream fuzz_idx fuzz_config
 fuzz_checkpoint_info fuzz_vocabulary fuzz_http_request fuzz_jpeg_window fuzz_text_tokenizers
 fuzz_feature_columns"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
san="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSHARDFLOW_FUZZ=ON -DSHARDFLOW_CUDA=OFF \
  -DSHARDFLOW_ONEDNN=OFF \
  -DSHARDFLOW_UNIT_TESTS_ONLY=ON "-DCMAKE_CXX_FLAGS=$san" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
# shellcheck disable=SC2086
nice ninja -C "$build" -j2 $targets
[ "${1:-}" = --build-only ] && exit 0
seconds=${1:-40}
count=$(echo $targets | wc -w)
per=$((seconds / count)); [ "$per" -ge 3 ] || per=3
corpus=$build/fuzz-corpus artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
rm -rf "$corpus"; mkdir -p "$corpus/fixtures-reader" "$corpus/fixtures-example"
# Fixture seeds: each TFRecord fixture as a plain/gzip/zlib reader input (first byte = mode),
# and the Examples inside the plain fixtures for the parser.
i=0
for f in "$fixtures"/*.tfrecord "$fixtures"/*.gz "$fixtures"/*.zlib; do
  [ -f "$f" ] || continue
  case "$f" in *.gz) mode='\001' ;; *.zlib) mode='\002' ;; *) mode='\000' ;; esac
  { printf "$mode"; head -c 65536 "$f"; } > "$corpus/fixtures-reader/seed$i"; i=$((i + 1))
  { printf '\004'; head -c 65536 "$f"; } > "$corpus/fixtures-reader/seed$i"; i=$((i + 1))
done
[ "$i" -gt 0 ] || { echo "run_fuzzers: no TFRecord fixtures to seed from in $fixtures"; exit 1; }
/usr/bin/python3 - "$fixtures" "$corpus/fixtures-example" <<'PY'
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
for target in $targets; do
  seeds=("$root/tests/fuzz/corpus/$target") max_len=()
  case $target in
    fuzz_tfrecord_reader) seeds+=("$corpus/fixtures-reader"); max_len=(-max_len=200000) ;;
    fuzz_example_parser) seeds+=("$corpus/fixtures-example"); max_len=(-max_len=200000) ;;
  esac
  mkdir -p "$corpus/$target"
  echo "== $target for ${per}s"
  if ! "$build/bin/$target" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 "${max_len[@]}" \
       -artifact_prefix="$artifacts/$target-" -print_final_stats=1 "$corpus/$target" "${seeds[@]}" \
       2>"$build/$target.log"; then
    echo "FAILED: $target found a crash (see $build/$target.log and $artifacts)"; tail -30 "$build/$target.log"
    status=1
  else
    grep -E "^(stat::number_of_executed_units|Done)" "$build/$target.log" || tail -2 "$build/$target.log"
  fi
done
exit $status
