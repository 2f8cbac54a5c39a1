#!/usr/bin/env bash
# fuzz_long.sh [SECONDS_PER_TARGET] (default 600): a long fuzzing campaign. Builds the libFuzzer
# targets (tests/fuzz/run_fuzzers.sh --build-only) and runs every target for SECONDS_PER_TARGET,
# seeded from its in-tree corpus tests/fuzz/corpus/<target>/, FUZZ_JOBS (default 1) targets at a
# time. New inputs go to build-fuzz/fuzz-long-corpus/<target>/ (kept between campaigns, so a
# second campaign starts from what the first found), findings to build-fuzz/fuzz-long-artifacts/.
# Prints a Markdown table, per target: executions, seconds, libFuzzer's final coverage (cov:
# edges, ft: features) and crashes found (libFuzzer stops at its first finding: crash,
# sanitizer report, leak, uncaught exception, an input over 10 s or over 2 GiB). Exit 1 when any
# target found something.
set -eu
seconds=${1:-600}
jobs=${FUZZ_JOBS:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
"$root/tests/fuzz/run_fuzzers.sh" --build-only >/dev/null
targets=$(cd "$root/tests/fuzz/corpus" && ls -d fuzz_* | tr '\n' ' ')
corpus=$build/fuzz-long-corpus artifacts=$build/fuzz-long-artifacts
mkdir -p "$artifacts"
stamp=$build/fuzz-long.stamp
touch "$stamp"

run_one() {  # run_one TARGET: one libFuzzer run; its log is build-fuzz/TARGET.long.log
  local target=$1 start=$SECONDS
  mkdir -p "$corpus/$target"
  "$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$target-" -print_final_stats=1 \
    "$corpus/$target" "$root/tests/fuzz/corpus/$target" >"$build/$target.long.log" 2>&1 || true
  echo $((SECONDS - start)) >"$build/$target.long.seconds"
}

running=0
for target in $targets; do
  run_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

echo "| target | executions | seconds | cov | ft | crashes |"
echo "|---|---|---|---|---|---|"
status=0
for target in $targets; do
  log=$build/$target.long.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+[[:space:]].* cov: ' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  crashes=$(find "$artifacts" -name "$target-*" -newer "$stamp" | wc -l)
  [ "$crashes" -eq 0 ] || status=1
  echo "| $target | ${execs:-?} | $(cat "$build/$target.long.seconds") | ${cov:-?} | ${ft:-?} | $crashes |"
done
exit $status
