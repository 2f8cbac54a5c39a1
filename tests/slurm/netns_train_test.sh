#!/usr/bin/env bash
# A short data-parallel training run across two network-namespace "nodes" (netns_cluster.sh),
# 2 ranks per node, must give exactly the single-node result: the same parameters, bit for bit,
# and the same test loss as 4 ranks on one node (same all-reduce algorithm, same data order).
# The binding table must show both hosts. Exit 77 (skip) when not root or no `ip netns`.
#   netns_train_test.sh SOURCE_DIR BINARY_DIR
set -uo pipefail
src=${1:?source dir} bin=${2:?binary dir}/bin
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/netns_train.XXXXXX")
cleanup() { "$here/netns_cluster.sh" down "$work/cluster" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$here/netns_cluster.sh" up "$work/cluster" || exit $?   # 77: skip
mpirun --allow-run-as-root -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=2000 --output.path="$work/data/t" --output.shards=4 --log.level=warn >/dev/null ||
  { echo "convert failed"; exit 1; }
common=(--config "$src/configs/fmnist_mlp.ini" --data.files="$work/data/t-*-of-*.tfrecord"
        --eval.files="$work/data/t-*-of-*.tfrecord" --train.max_steps=20 --train.batch_size=16
        --dist.allreduce=ring --no-progress --log.level=warn)
envs=(-x OMPI_MCA_mpi_yield_when_idle=1 -x SHARDFLOW_THREADS=1 -x SHARDFLOW_BINDING_REPORT=1)
timeout 120 "$here/netns_cluster.sh" mpirun "$work/cluster" -np 4 "${envs[@]}" \
  "$bin/shardflow-train" "${common[@]}" --output "$work/two" >"$work/two.out" 2>&1 ||
  { echo "FAIL: two-node run"; tail -20 "$work/two.out"; exit 1; }
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "${envs[@]}" \
  "$bin/shardflow-train" "${common[@]}" --output "$work/one" >"$work/one.out" 2>&1 ||
  { echo "FAIL: one-node run"; tail -20 "$work/one.out"; exit 1; }
fail=0
for host in sfnode0 sfnode1; do
  [ "$(grep -Ec "^[0-3] +$host +[01] " "$work/two.out")" -eq 2 ] ||
    { echo "FAIL: binding table does not show 2 ranks on $host"; fail=1; }
done
/usr/bin/python3 - "$work/two" "$work/one" <<'PY' || fail=1
import glob, json, sys
import h5py, numpy as np
two, one = sys.argv[1], sys.argv[2]
s2, s1 = (json.load(open(d + "/summary.json")) for d in (two, one))
ok = s2["ranks"] == s1["ranks"] == 4 and s2["test_loss"] == s1["test_loss"]
f2 = h5py.File(sorted(glob.glob(two + "/checkpoints/*.h5"))[-1], "r")
f1 = h5py.File(sorted(glob.glob(one + "/checkpoints/*.h5"))[-1], "r")
names = []
f2["params"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
same = [n for n in names if np.array_equal(f2["params"][n][()], f1["params"][n][()])]
print(f"test loss two nodes {s2['test_loss']!r}, one node {s1['test_loss']!r}; "
      f"{len(same)} of {len(names)} parameters bitwise equal")
sys.exit(0 if ok and names and len(same) == len(names) else 1)
PY
[ $fail -eq 0 ] && echo "netns_train: ok" || { tail -30 "$work/two.out"; exit 1; }
