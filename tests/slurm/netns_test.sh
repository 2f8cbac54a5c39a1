#!/usr/bin/env bash
# Two-"node" OpenMPI job over network namespaces (netns_cluster.sh), 2 ranks per node:
#   - topology_program through slurm/launch.sh: every rank sees num_nodes 2 and local_size 2,
#     the binding table (SHARDFLOW_BINDING_REPORT from launch.sh) lists both hosts with one core
#     per local rank, and every all-reduce algorithm sums correctly across the nodes;
#   - shardflow-bench allreduce: runs on "4 ranks (2 node(s))", every row checks ok; the shm
#     algorithm refuses the two nodes with a one-line error;
#   - slurm/scaling_study.py --mpirun "netns_cluster.sh mpirun DIR" (fake trainer): the 4-rank
#     point runs 2 ranks on each node.
# The namespaces are deleted on exit, also on failure. Exit 77 when not root or no `ip netns`.
#   netns_test.sh TOPOLOGY_PROGRAM SHARDFLOW_BENCH
set -uo pipefail
program=${1:?topology_program} bench=${2:?shardflow-bench}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/netns_test.XXXXXX")
cleanup() { "$here/netns_cluster.sh" down "$work/cluster"; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

"$here/netns_cluster.sh" up "$work/cluster"
rc=$?
[ $rc -eq 0 ] || exit $rc  # 77: skip
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
count() { grep -Ec -- "$2" "$1"; }
# 4 ranks on 2 cores: let waiting ranks yield.
run() { timeout 90 "$here/netns_cluster.sh" mpirun "$work/cluster" -np 4 -x OMPI_MCA_mpi_yield_when_idle=1 "$@"; }

run "$src/slurm/launch.sh" -- "$program" >"$work/topo.out" 2>"$work/topo.err"
rc=$?
[ $rc -eq 0 ] || fail "topology_program exit status $rc"
out=$work/topo.out
[ "$(count "$out" '^rank [0-3] host sfnode[01] local_rank [01] local_size 2 num_nodes 2$')" -eq 4 ] ||
  fail "not 4 ranks seeing 2 nodes with 2 ranks each"
[ "$(count "$out" '^rank [01] host sfnode0 ')" -eq 2 ] || fail "ranks 0 and 1 not on sfnode0"
[ "$(count "$out" '^rank [23] host sfnode1 ')" -eq 2 ] || fail "ranks 2 and 3 not on sfnode1"
# Binding table: rank, host, local rank, GPU, cores; launch.sh gives local rank L core L.
[ "$(count "$out" '^rank +host +local +gpu +cores')" -eq 1 ] || fail "no binding table header"
for row in '^0 +sfnode0 +0 +- +0$' '^1 +sfnode0 +1 +- +1$' '^2 +sfnode1 +0 +- +0$' '^3 +sfnode1 +1 +- +1$'; do
  [ "$(count "$out" "$row")" -eq 1 ] || fail "binding table has no row matching '$row'"
done
[ "$(count "$out" '^allreduce (hierarchical|ring|rd|mpi) count=[0-9]+ ok$')" -eq 20 ] ||
  fail "not all 20 all-reduce checks passed"

run "$bench" allreduce --min-bytes 1K --max-bytes 256K --step-factor 16 --iters 3 --warmup 1 \
  --repeats 1 --algorithms hierarchical,ring,mpi --json >"$work/bench.out" 2>"$work/bench.err"
rc=$?
[ $rc -eq 0 ] || fail "shardflow-bench allreduce exit status $rc"
[ "$(count "$work/bench.out" '4 ranks \(2 node\(s\)\)')" -eq 1 ] || fail "bench did not see 2 nodes"
[ "$(count "$work/bench.out" '"ok":true')" -eq 9 ] || fail "bench: not 9 rows checked ok"
[ "$(count "$work/bench.out" '"ok":false')" -eq 0 ] || fail "bench: a row failed its check"

# The shared-memory all-reduce refuses ranks on two nodes: one line naming why, non-zero exit.
run "$bench" allreduce --min-bytes 1K --max-bytes 1K --iters 1 --repeats 1 --algorithms shm \
  >"$work/shm.out" 2>"$work/shm.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "shm across nodes: exit status $rc, want an error"
grep -q 'shared-memory all-reduce needs every rank on one node (2 of 4 ranks' "$work/shm.out" \
  "$work/shm.err" || fail "shm across nodes: no error naming the topology"

# The scaling-study driver across the two nodes (fake trainer): 4 ranks on 2 nodes.
printf '[study]\nname = netns\nconfig = configs/fmnist_mlp.ini\nranks = 2,4\nnodes = 1,2\nscaling = weak\nbatch = 16\noverrides = --train.max_steps=5\n' >"$work/study.ini"
timeout 90 "$src/slurm/scaling_study.py" "$work/study.ini" --mode mpirun --out "$work/study" \
  --trainer "$here/fake_trainer.py" --timeout 60 \
  --mpirun "$here/netns_cluster.sh mpirun $work/cluster" >"$work/study.out" 2>"$work/study.err"
rc=$?
[ $rc -eq 0 ] || fail "scaling study over 2 nodes: exit status $rc"
grep -q '^4,2,16,64,5,' "$work/study/results.csv" 2>/dev/null || fail "study: no 4-rank 2-node row"
[ "$(count "$work/study/points/r4_n2/run.log" 'rank [23]/4 on sfnode1')" -eq 2 ] ||
  fail "study: ranks 2 and 3 of the 2-node point did not run on sfnode1"

if [ $failures -ne 0 ]; then
  for f in "$work"/*.out "$work"/*.err; do echo "== $f" >&2; tail -40 "$f" >&2; done
  exit 1
fi
cat "$work/topo.out"
grep -v '^{' "$work/bench.out"
echo "netns_test: all checks passed"
