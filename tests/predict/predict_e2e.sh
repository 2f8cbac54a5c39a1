#!/usr/bin/env bash
# End-to-end test of shardflow-predict: convert 1000 Fashion-MNIST test records into 3 shards,
# train one quick model, predict with 1, 2 and 3 ranks (HDF5 and CSV) and check that every input
# id is written exactly once, sorted, with the same predictions for every rank count; an
# autoencoder's per-record errors; then the error cases (missing input, a checkpoint that does
# not fit the model spec, an empty checkpoint directory, duplicate ids).
#   predict_e2e.sh BIN_DIR SOURCE_DIR MPIEXEC [MPIEXEC ARGS...]
set -euo pipefail
bin=$1 src=$2
shift 2
mpi=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "predict_e2e: $*" >&2; exit 1; }
py=/usr/bin/python3

"${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=1000 --output.path="$work/data/fm" --output.shards=3 >"$work/convert.log" 2>&1 ||
  { cat "$work/convert.log"; fail "convert failed"; }
cfg="$src/configs/fmnist_mlp.ini"
"${mpi[@]}" -np 2 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
  --eval.files= --train.epochs=1 --train.max_steps=8 --train.warmup_steps=0 \
  --train.threads=1 --output "$work/run" --no-progress >"$work/train.log" 2>&1 ||
  { cat "$work/train.log"; fail "train failed"; }
ckpt_dir="$work/run/checkpoints"
ls "$ckpt_dir"/ckpt-*.h5 >/dev/null || fail "training wrote no checkpoint"

predict() {  # predict NP OUTPUT [extra flags...]
  local np=$1 out=$2
  shift 2
  "${mpi[@]}" -np "$np" "$bin/shardflow-predict" --config "$cfg" --checkpoint "$ckpt_dir" \
    --input "$work/data/fm-*.tfrecord" --output "$out" --train.threads=1 "$@"
}
for np in 1 2 3; do
  predict "$np" "$work/p$np.h5" >"$work/p$np.log" 2>&1 || { cat "$work/p$np.log"; fail "predict -np $np failed"; }
  grep -Eq "^predicted 1000 records on $np ranks? in .* records/s$" "$work/p$np.log" ||
    { cat "$work/p$np.log"; fail "no records/s line (np $np)"; }
  grep -Eq "^accuracy: 0\.[0-9]{4} \([0-9]+ of 1000 labelled records\)$" "$work/p$np.log" ||
    { cat "$work/p$np.log"; fail "no accuracy line (np $np)"; }
done
# CSV with an odd batch size (rows not a multiple of it) from a single checkpoint file; a
# training-only setting that 3 ranks could not train with (global batch 64) does not matter.
ckpt_file=$(ls "$ckpt_dir"/ckpt-*.h5 | tail -n 1)
"${mpi[@]}" -np 3 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$ckpt_file" \
  --input "$work/data/fm-*.tfrecord" --output "$work/p3.csv" --predict.batch_size=7 \
  --train.batch_semantics=global --train.batch_size=64 \
  >"$work/csv.log" 2>&1 || { cat "$work/csv.log"; fail "csv predict failed"; }

"$py" - "$work" <<'PY' || fail "output check failed"
import csv, gzip, sys
import h5py, numpy as np
work = sys.argv[1]
expected = np.arange(1000)  # shardflow-convert's ids: the record's index in the source
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz") as g:
    true_labels = np.frombuffer(g.read()[8:8 + 1000], dtype=np.uint8).astype(np.int64)
ref = None
for np_ in (1, 2, 3):
    with h5py.File(f"{work}/p{np_}.h5", "r") as f:
        ids, classes, probs = f["ids"][:], f["classes"][:], f["probabilities"][:]
        labels, attrs = f["labels"][:], dict(f.attrs)
    assert np.array_equal(labels, true_labels), f"np {np_}: the labels column is not the input's"
    assert attrs["task"] == b"classify" and attrs["records"] == 1000, attrs
    assert attrs["checkpoint"].decode().endswith(".h5") and b"fm-*.tfrecord" in attrs["input"], attrs
    assert ids.dtype == np.int64 and classes.dtype == np.int64 and probs.dtype == np.float32
    assert probs.shape == (1000, 10), probs.shape
    assert np.array_equal(ids, expected), f"np {np_}: ids are not the input ids once each, sorted"
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert np.array_equal(classes, probs.argmax(axis=1))
    if ref is None:
        ref = (classes, probs)
    else:
        assert np.array_equal(classes, ref[0]), f"np {np_}: classes differ from np 1"
        assert np.abs(probs - ref[1]).max() <= 1e-6, f"np {np_}: probabilities differ from np 1"
with open(f"{work}/p3.csv", newline="") as fh:
    rows = list(csv.reader(fh))
assert rows[0] == ["id", "label", "class"] + [f"p{j}" for j in range(10)], rows[0]
ids = [int(r[0]) for r in rows[1:]]
assert ids == list(range(1000)), "csv ids are not the input ids once each, sorted"
assert [int(r[1]) for r in rows[1:]] == list(true_labels), "csv labels are not the input's"
assert [int(r[2]) for r in rows[1:]] == list(ref[0]), "csv classes differ from the HDF5 ones"
p = np.array([[float(x) for x in r[3:]] for r in rows[1:]])
assert np.abs(p - ref[1]).max() <= 1e-6, "csv probabilities differ"
PY
# Autoencoder: per-record reconstruction errors.
ae=(--model.task=reconstruct --model.input_shape=784 --model.spec="dense:16, relu, dense:784")
"${mpi[@]}" -np 2 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
  --eval.files= --train.epochs=1 --train.max_steps=3 --train.threads=1 "${ae[@]}" \
  --output "$work/ae" --no-progress >"$work/ae.log" 2>&1 || { cat "$work/ae.log"; fail "ae train failed"; }
"${mpi[@]}" -np 3 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$work/ae/checkpoints" \
  --input "$work/data/fm-*.tfrecord" --output "$work/ae.h5" "${ae[@]}" >"$work/aep.log" 2>&1 ||
  { cat "$work/aep.log"; fail "ae predict failed"; }
grep -Eq "^mean reconstruction error: [0-9.e+-]+$" "$work/aep.log" || { cat "$work/aep.log"; fail "no error line"; }
"$py" - "$work" <<'PY' || fail "ae output check failed"
import sys
import h5py, numpy as np
with h5py.File(f"{sys.argv[1]}/ae.h5", "r") as f:
    assert sorted(f.keys()) == ["errors", "ids"], list(f.keys())
    ids, errors = f["ids"][:], f["errors"][:]
assert np.array_equal(ids, np.arange(1000)), "ae ids are not the input ids once each, sorted"
assert errors.dtype == np.float32 and errors.shape == (1000,)
assert np.all(np.isfinite(errors)) and np.all(errors >= 0) and errors.std() > 0
PY

# No records at all: empty datasets of the right shapes, no accuracy line.
: >"$work/empty.tfrecord"
predict 2 "$work/empty.h5" --input "$work/empty.tfrecord" >"$work/empty.log" 2>&1 ||
  { cat "$work/empty.log"; fail "empty predict failed"; }
grep -q "^predicted 0 records on 2 ranks" "$work/empty.log" && ! grep -q "^accuracy" "$work/empty.log" ||
  { cat "$work/empty.log"; fail "empty input: wrong report"; }
"$py" -c "
import sys, h5py
f = h5py.File(sys.argv[1], 'r')
assert {k: f[k].shape for k in f} == {'ids': (0,), 'classes': (0,), 'probabilities': (0, 10)}, dict(f)
" "$work/empty.h5" || fail "empty output check failed"

acc() { grep -E '^accuracy:' "$1"; }
[ "$(acc "$work/p1.log")" = "$(acc "$work/p3.log")" ] || fail "accuracy differs between 1 and 3 ranks"
[ "$(acc "$work/p1.log")" = "$(acc "$work/csv.log")" ] || fail "accuracy differs for batch size 7"

expect_error() {  # expect_error CODE|nonzero REGEX -- command...
  local code=$1 re=$2
  shift 3
  set +e
  "$@" >"$work/err.out" 2>"$work/err.log"
  local rc=$?
  set -e
  if [ "$code" = nonzero ]; then [ "$rc" -ne 0 ] || fail "exit 0, expected an error: $*"; code=$rc; fi
  [ "$rc" -eq "$code" ] || { cat "$work/err.log"; fail "exit $rc, expected $code: $*"; }
  [ "$(grep -Ec "$re" "$work/err.log")" -eq 1 ] || { cat "$work/err.log"; fail "expected one line matching '$re'"; }
}
expect_error 2 "error: not found: .*$work/data/none-\*\.tfrecord" -- \
  "${mpi[@]}" -np 2 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$ckpt_dir" \
  --input "$work/data/none-*.tfrecord" --output "$work/x.h5"
expect_error 2 "error: invalid argument: parameter /params/01_dense/kernel has shape \\[784,512\\] in the checkpoint but \\[784,100\\] in the model" -- \
  "${mpi[@]}" -np 2 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$ckpt_file" \
  --model.spec="flatten, dense:100, relu, dense:256, relu, dense:10" --input "$work/data/fm-*.tfrecord" --output "$work/x.h5"
mkdir -p "$work/empty"
expect_error 2 "error: not found: no intact checkpoint.*$work/empty" -- \
  "${mpi[@]}" -np 2 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$work/empty" \
  --input "$work/data/fm-*.tfrecord" --output "$work/x.h5"
# The same shard under two names: every id of it twice, refused (run phase: the job ends).
cp "$work/data/fm-00001-of-00003.tfrecord" "$work/data/copy.tfrecord"
expect_error 3 "error: data loss: record id [0-9]+ was predicted twice" -- \
  "${mpi[@]}" -np 2 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$ckpt_dir" \
  --input "$work/data/fm-*.tfrecord,$work/data/copy.tfrecord" --output "$work/x.csv"
[ ! -e "$work/x.csv" ] || fail "a run with duplicate ids left an output file"
[ ! -e "$work/x.h5" ] || fail "a failed run left an output file"
echo "predict_e2e: ok"
