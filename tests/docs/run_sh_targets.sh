#!/usr/bin/env bash
# ./run.sh builds the programs only, never the tests (issue 24, item 12): the targets it names
# in its `programs=(...)` line (no such line: it builds `all`) must not depend on any file under
# tests/, checked with `ninja -t inputs` in the CTest build folder. Prints
# "run_sh_targets.sh: ok" last on success.
#   run_sh_targets.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
fail() { echo "run_sh_targets.sh: FAILED: $*"; exit 1; }
line=$(grep -E '^programs=\(' "$src/run.sh" || true)
if [ -n "$line" ]; then
  eval "$line"
else
  programs=(all)
fi
echo "run.sh builds: ${programs[*]}"
inputs=$(ninja -C "$build" -t inputs "${programs[@]}") || fail "ninja -t inputs failed"
tests=$(grep -E "(^|/)tests/" <<<"$inputs" | grep -v -E "^$build/" || true)
if [ -n "$tests" ]; then
  echo "$tests" | head -5
  fail "run.sh's targets build $(grep -c . <<<"$tests") test files"
fi
for p in shardflow-train shardflow-convert shardflow-predict shardflow-inspect; do
  [[ " ${programs[*]} " == *" $p "* ]] || fail "run.sh does not build $p"
done
echo "run_sh_targets.sh: ok"
