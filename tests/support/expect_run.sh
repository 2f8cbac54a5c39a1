#!/usr/bin/env bash
# Runs a command and checks its exit status and output. Used by CTest for process-level tests.
#   expect_run.sh [checks...] -- COMMAND ARGS...
# Checks:
#   --exit N                 exit status must be N
#   --exit-nonzero           exit status must not be 0
#   --within S               the command must finish within S seconds (it is killed after S)
#   --stderr-count RE N      exactly N lines of stderr match the extended regex RE
#   --stdout-count RE N      likewise for stdout
#   --stderr-all RE          every line of stderr matches RE
#   --stdout-contains RE     at least one line of stdout matches RE
#   --log-file PATH          run with SHARDFLOW_LOG_FILE=PATH (removed first); its lines are
#                            checked as if they were stderr
set -u
exit_want="" within=600 checks=() log_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) exit_want="$2"; shift 2 ;;
    --exit-nonzero) exit_want="nonzero"; shift ;;
    --within) within="$2"; shift 2 ;;
    --log-file) log_file="$2"; shift 2 ;;
    --stderr-count|--stdout-count) checks+=("$1" "$2" "$3"); shift 3 ;;
    --stderr-all|--stdout-contains) checks+=("$1" "$2" "-"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
if [ -n "$log_file" ]; then rm -f "$log_file"; export SHARDFLOW_LOG_FILE="$log_file"; fi
start=$(date +%s%N)
timeout --kill-after=5 "$within" "$@" >"$out" 2>"$err"
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
elapsed="$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))"
if [ -n "$log_file" ] && [ -f "$log_file" ]; then cat "$log_file" >>"$err"; rm -f "$log_file"; fi
fail=0
say() { echo "expect_run: $*"; fail=1; }
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then say "timed out after ${within}s: $*"; fi
case "$exit_want" in
  "") ;;
  nonzero) [ "$rc" -ne 0 ] || say "exit status 0, wanted non-zero" ;;
  *) [ "$rc" -eq "$exit_want" ] || say "exit status $rc, wanted $exit_want" ;;
esac
i=0
while [ $i -lt ${#checks[@]} ]; do
  kind=${checks[$i]} re=${checks[$((i+1))]} n=${checks[$((i+2))]}
  i=$((i+3))
  case "$kind" in
    --stderr-count) got=$(grep -E -c -- "$re" "$err"); [ "$got" -eq "$n" ] || say "stderr: $got lines match '$re', wanted $n" ;;
    --stdout-count) got=$(grep -E -c -- "$re" "$out"); [ "$got" -eq "$n" ] || say "stdout: $got lines match '$re', wanted $n" ;;
    --stderr-all) bad=$(grep -E -v -c -- "$re" "$err"); [ "$bad" -eq 0 ] || { say "stderr: $bad lines do not match '$re', e.g.:"; grep -E -v -- "$re" "$err" | head -3; } ;;
    --stdout-contains) grep -E -q -- "$re" "$out" || say "stdout has no line matching '$re'" ;;
  esac
done
echo "expect_run: exit status $rc after ${elapsed}s: $*"
if [ $fail -ne 0 ]; then
  echo "--- stdout (last 40 lines)"; tail -40 "$out"
  echo "--- stderr (last 40 lines)"; tail -40 "$err"
fi
exit $fail
