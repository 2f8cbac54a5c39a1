#!/usr/bin/env bash
# shardflow-inspect on HDF5 files: the fixtures (written by h5py) against hdf5.manifest.json,
# damaged copies (a corrupt compressed chunk, a truncated file), a missing file and `cat`.
#   inspect_hdf5_runs.sh BIN_DIR WORK_DIR FIXTURES_HDF5_DIR
set -uo pipefail
bin=$1 work=$2 fx=$3
inspect=$bin/shardflow-inspect
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "inspect_hdf5_runs: FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc WANT OUT_FILE CMD...
  local want=$1 out=$2
  shift 2
  "$@" >"$out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || { cat "$out"; fail "exit $rc, wanted $want: $*"; }
}

expect_rc 0 verify.txt "$inspect" verify "$fx/fmnist-test-1000.h5" "$fx/sensors-48x128x6.h5"
grep -q "fmnist-test-1000.h5: ok, 3 datasets, 800000 bytes$" verify.txt || fail "$(cat verify.txt)"
grep -q "sensors-48x128x6.h5: ok, 2 datasets, 147840 bytes$" verify.txt || fail "$(cat verify.txt)"

for f in fmnist-test-1000.h5 sensors-48x128x6.h5; do
  expect_rc 0 stats.json "$inspect" stats --json "$fx/$f"
  /usr/bin/python3 - stats.json "$fx/hdf5.manifest.json" "$f" <<'PY' || fail "stats of $f"
import json, sys
st = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))[sys.argv[3]]
got = {d["name"]: d for d in st["datasets"]}
assert st["files"] == 1 and sorted(got) == sorted(want), (sorted(got), sorted(want))
for name, w in want.items():
    d = got[name]
    assert d["dtype"] == w["dtype"] and d["shape"] == w["shape"], (name, d, w)
    if isinstance(w["sum"], int):
        assert d["sum"] == w["sum"], (name, d["sum"], w["sum"])
    else:
        assert abs(d["sum"] - w["sum"]) <= 1e-9 * abs(w["sum"]), (name, d["sum"], w["sum"])
print("stats ok:", sys.argv[3])
PY
done
expect_rc 0 stats.txt "$inspect" stats "$fx/sensors-48x128x6.h5"
grep -Eq "^series +float32 +\[48, 128, 6\] +36864 +-755\.37125" stats.txt || fail "$(cat stats.txt)"
# Issue 27.8: the records are the rows (stats printed "records: 0" for HDF5 files).
grep -q "^records: 48$" stats.txt || fail "records of sensors-48x128x6.h5: $(cat stats.txt)"
expect_rc 0 stats.txt "$inspect" stats "$fx/fmnist-test-1000.h5"
grep -q "^records: 1000$" stats.txt || fail "records of fmnist-test-1000.h5: $(cat stats.txt)"

# A corrupt chunk of the gzip-compressed images: verify and stats report data loss (3).
cp "$fx/fmnist-test-1000.h5" corrupt.h5 && chmod u+w corrupt.h5
printf '\377\377\377\377\377\377\377\377\377\377\377\377' |
  dd of=corrupt.h5 bs=1 seek=100000 conv=notrunc status=none
expect_rc 3 out.txt "$inspect" verify corrupt.h5
grep -q "^corrupt.h5: data loss in dataset images: cannot read" out.txt || fail "$(cat out.txt)"
expect_rc 3 out.txt "$inspect" stats corrupt.h5
grep -q "error: data loss: cannot read the HDF5 data: the data is damaged" out.txt ||
  fail "$(cat out.txt)"
# A truncated file: HDF5 cannot open it -> data loss (3), and the clean file still verifies.
head -c 300000 "$fx/fmnist-test-1000.h5" >trunc.h5
expect_rc 3 out.txt "$inspect" verify trunc.h5 "$fx/sensors-48x128x6.h5"
grep -q "^trunc.h5: data loss: cannot open the HDF5 file: the file is truncated" out.txt ||
  fail "$(cat out.txt)"
grep -q "sensors-48x128x6.h5: ok, 2 datasets" out.txt || fail "$(cat out.txt)"
# Missing file (unreadable, 2, wins over data loss) and cat (not supported, 2).
expect_rc 2 out.txt "$inspect" verify missing.h5 trunc.h5
grep -q "error: not found: .*missing.h5" out.txt || fail "$(cat out.txt)"
expect_rc 2 out.txt "$inspect" cat "$fx/sensors-48x128x6.h5"
grep -q "cat is not supported for HDF5 files" out.txt || fail "$(cat out.txt)"
echo "inspect_hdf5_runs.sh: ok"
