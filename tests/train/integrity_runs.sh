#!/usr/bin/env bash
# Process-level tests of a run's integrity: no silent wrong results, no lost work, no wrong
# causes (the items of issue 20). A run never mixes with another run's output or checkpoints, the
# parallelism knobs never change the results, keys that would be ignored are refused, a damaged
# or unusable file is named with its true cause, and a killed run's leftovers are cleaned up.
# shardflow-train (and convert, predict, inspect) on small Fashion-MNIST shards made by
# shardflow-convert. Prints "integrity_runs.sh MODE: ok" last when every check passed.
#   integrity_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
# MODE:
#   fresh_output  a fresh run into an OUTPUT holding another run's checkpoints is refused (exit 2,
#                 one line naming the folder), nothing of the old run touched; --overwrite clears
#                 the old checkpoints and metrics (logged) and trains (item 1).
#   foreign_resume  --resume with a config whose data order differs (data.seed) is refused, one
#                 line naming the checkpoint, both hashes and the key with both values; more
#                 epochs or another lr are accepted, and so is a checkpoint without the hash
#                 (written before it), with a warning (item 1).
#   order         same config and seed, parallel_reads 2 vs 4 and parallel_calls 1 vs 3: bit-equal
#                 metrics and parameters; a run saved with parallel_reads=2 resumes with
#                 parallel_reads=4 and ends bit-equal to the uninterrupted run (item 2).
#   train_keys    data.batch_size, data.epochs and the [eval] keys train sets itself are refused
#                 when given (exit 2, one line naming the key and what acts) and left out of the
#                 resolved table (item 4).
#   convert_scale shards written with preprocess.normalize=scale train with the features line of
#                 their meta.json, to the loss of the uint8 shards (item 6).
#   predict_ids   shardflow-predict without an id feature writes the global record index, the
#                 same ids and rows as with convert's id feature, on 1 and 3 ranks (item 5).
#   slow_checkpoint  rank 0 sleeps 3 s in every checkpoint with dist.watchdog_seconds=1: exit 0,
#                 rank 1 logs that it waits on busy rank 0 (item 8).
#   checkpoint_dir  checkpoint.dir under a plain file: exit 2 at start-up, one line naming it,
#                 nothing trained (item 9).
#   killed_writer a run killed after its step-10 checkpoint, with a .tmp checkpoint left: the
#                 resume removes it (logged) and metrics.jsonl has steps 1..20 once each (item 10).
#   header_flip   a flipped byte in the newest checkpoint's root object header: inspect verify
#                 exits 3, --resume falls back to the earlier checkpoint (item 11).
#   tfrecord_damage  a damaged length field and a truncated shard: train names the cause, file,
#                 offset and record as inspect verify does (exit 3); on_corrupt=skip trains (item 12).
#   folders       a directory among the data files, or as --config: exit 2 saying so (item 13).
#   label_range   labels past a 5-class model: one line naming the label, file and record (item 14).
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"

# train NP LOG ARGS...: a small model on 8 shards of 640 records (2 ranks x 4 files: the
# interleave cycle matters), 640 / 2 / 32 = 10 steps per epoch.
train() {
  local np=$1 log=$2
  shift 2
  run_train "$np" "$log" --eval.files= --data.files='data/fm-*.tfrecord' \
    --data.shuffle_buffer=64 --train.batch_size=32 --train.epochs=2 --train.log_every=1 \
    --train.warmup_steps=2 --checkpoint.keep_last=0 \
    --model.spec='flatten, dense:32, relu, dense:10' "$@"
}

convert 8 640 data/fm
case "$mode" in
fresh_output)
  train 2 a.log --output run || { cat a.log; fail "training failed"; }
  before=$(cat run/checkpoints/* run/metrics.jsonl | md5sum)
  rc=0
  train 2 b.log --output run --data.seed=5 || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "a fresh run into a used OUTPUT: exit $rc, wanted 2"; }
  n=$(grep -c "error: " b.log || true)
  m=$(grep -c "error: invalid argument: the output already holds a run (checkpoints); a fresh run would mix with it \[file=run/checkpoints\] hint: --resume continues it, --overwrite clears it" b.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat b.log; fail "wanted one error line naming the folder"; }
  [ "$(cat run/checkpoints/* run/metrics.jsonl | md5sum)" = "$before" ] || fail "the old run changed"
  train 2 c.log --output run --data.seed=5 --train.epochs=1 --overwrite ||
    { cat c.log; fail "--overwrite failed"; }
  grep -q "overwrite: removed 2 checkpoints of the previous run from run/checkpoints and its metrics.jsonl" c.log ||
    { cat c.log; fail "no line saying what --overwrite removed"; }
  got=$(cd run/checkpoints && ls | tr '\n' ' ')
  [ "$got" = "ckpt-000000010.h5 " ] || fail "checkpoints '$got', wanted only the new run's step 10"
  n=$(grep -c '"loss"' run/metrics.jsonl)
  [ "$n" -eq 10 ] || fail "metrics.jsonl has $n training lines, wanted the new run's 10"
  rc=0
  train 2 d.log --output run --resume --overwrite || rc=$?
  [ $rc -eq 2 ] || { cat d.log; fail "--resume --overwrite: exit $rc, wanted 2"; }
  ;;
foreign_resume)
  train 2 a.log --output run --train.epochs=1 || { cat a.log; fail "training failed"; }
  rc=0
  train 2 b.log --output run --resume --data.seed=7 || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "resume with another data.seed: exit $rc, wanted 2"; }
  n=$(grep -c "error: " b.log || true)
  m=$(grep -E -c "error: invalid argument: the checkpoint belongs to another run \(config hash [0-9a-f]{16} there, [0-9a-f]{16} here: data\.seed '1' there, '7' here\) \[file=run/checkpoints/ckpt-000000010\.h5\]" b.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat b.log; fail "wanted one error line naming the key"; }
  # A checkpoint written before the hash (its config text without the identity line): accepted,
  # with a warning.
  cp -r run run_old
  $py - run_old/checkpoints/ckpt-000000010.h5 <<'PY'
import sys
import h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    text = f["config"][()].decode()
    text = "".join(l for l in text.splitlines(True) if not l.startswith("# run identity: "))
    del f["config"]
    f.create_dataset("config", data=np.bytes_(text.encode()))
PY
  train 2 d.log --output run_old --resume --train.epochs=2 || { cat d.log; fail "resume of an old checkpoint failed"; }
  grep -q "ckpt-000000010.h5 predates run identity hashes: not checked" d.log ||
    { cat d.log; fail "no warning for a checkpoint without the hash"; }
  train 2 c.log --output run --resume --train.epochs=2 --train.lr=0.02 ||
    { cat c.log; fail "resume with more epochs and another lr failed"; }
  grep -q "resuming from run/checkpoints/ckpt-000000010.h5 at step 10" c.log ||
    { cat c.log; fail "no resume line"; }
  ;;
order)
  train 2 a.log --output run_a --data.parallel_reads=2 --data.parallel_calls=1 \
    --checkpoint.every_steps=7 || { cat a.log; fail "run A failed"; }
  train 2 b.log --output run_b --data.parallel_reads=4 --data.parallel_calls=3 ||
    { cat b.log; fail "run B failed"; }
  $py "$here/compare_runs.py" run_a run_b 20 || fail "parallel_reads 2 and 4 train differently"
  # Saved with one read setting at step 7, resumed with another (the auto read count used to
  # follow the binding and the iterator state was then refused as "a different pipeline").
  train 2 c1.log --output run_c --data.parallel_reads=2 --train.max_steps=7 ||
    { cat c1.log; fail "run C (first part) failed"; }
  train 2 c2.log --output run_c --data.parallel_reads=4 --resume ||
    { cat c2.log; fail "resume with parallel_reads=4 failed"; }
  $py "$here/compare_runs.py" run_a run_c 20 || fail "the resumed run differs"
  ;;
train_keys)
  # data.batch_size and data.epochs were shown in the table and ignored (item 4).
  rc=0
  train 2 a.log --output run --data.batch_size=128 || rc=$?
  [ $rc -eq 2 ] || { cat a.log; fail "--data.batch_size=128: exit $rc, wanted 2"; }
  n=$(grep -c "error: " a.log || true)
  m=$(grep -c "error: invalid argument: data.batch_size (command line) has no effect in shardflow-train: train.batch_size (with train.batch_semantics) sets the batch \[key=data.batch_size\]" a.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat a.log; fail "wanted one error line naming data.batch_size"; }
  rc=0
  train 2 b.log --output run --eval.files='data/fm-*.tfrecord' --eval.epochs=3 || rc=$?
  [ $rc -eq 2 ] && grep -q "error: invalid argument: eval.epochs (command line) has no effect" b.log ||
    { cat b.log; fail "--eval.epochs=3: exit $rc, wanted 2 naming it"; }
  train 2 c.log --output run --eval.files='data/fm-*.tfrecord' --check || { cat c.log; fail "--check failed"; }
  n=$(grep -E -c "^  (data\.(batch_size|epochs)|eval\.(batch_size|epochs|shuffle_buffer|drop_remainder|augmentations)) " c.log || true)
  m=$(grep -E -c "^  (train\.batch_size|data\.shuffle_buffer|data\.drop_remainder|eval\.files) " c.log || true)
  [ "$n" -eq 0 ] && [ "$m" -eq 4 ] || { cat c.log; fail "the table shows $n keys train sets itself"; }
  ;;
convert_scale)
  # What convert writes with preprocess.normalize=scale, train reads with the features line of
  # PREFIX.meta.json (float32 images used to be bytes that no schema could read) (item 6).
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-convert" --input.format=idx \
    --input.split=test --input.limit=640 --output.shards=4 --output.path=data/sc \
    --preprocess.normalize=scale >sc.log 2>&1 || { cat sc.log; fail "convert failed"; }
  features=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["data_features"])' \
    data/sc.meta.json) || fail "no data_features in data/sc.meta.json"
  [ "$features" = "image_raw:float:float32:28x28x1, label:int64:int64:scalar, id:int64:int64:scalar" ] ||
    fail "data_features '$features'"
  train 2 a.log --output run --data.files='data/sc-*.tfrecord' --data.features="$features" \
    --train.epochs=1 || { cat a.log; fail "training on the scaled shards failed"; }
  # The same images as uint8 (x 1/255 by model.input_scale) train to the same loss: the float
  # pixels are x/255 and used as they are.
  convert 4 640 data/u8
  train 2 b.log --output run_u8 --data.files='data/u8-*.tfrecord' --train.epochs=1 ||
    { cat b.log; fail "training on uint8 failed"; }
  $py - run/metrics.jsonl run_u8/metrics.jsonl <<'PY' || fail "scaled and uint8 shards train differently"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:])
assert len(a) == len(b) == 10 and all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(a, b)), (a, b)
PY
  ;;
predict_ids)
  # Records without an id feature get their global record index (file order, then record
  # order), as documented; it used to be (file_index << 40) | byte offset (item 5). On 1 and 3
  # ranks (3 ranks on 8 files cut them in byte ranges), ids equal convert's `id` feature.
  train 2 a.log --output run --train.epochs=1 || { cat a.log; fail "training failed"; }
  for np in 1 3; do
    for ids in id none; do
      flag=--predict.id_feature=id
      [ $ids = none ] && flag=--predict.id_feature=
      timeout -k 5 60 "${mpi[@]}" -np $np "$bin/shardflow-predict" --config "$src/configs/fmnist_mlp.ini" \
        --checkpoint run/checkpoints --input 'data/fm-*.tfrecord' --output p_${ids}_$np.h5 \
        --model.spec='flatten, dense:32, relu, dense:10' --train.threads=1 $flag \
        >p_${ids}_$np.log 2>&1 || { cat p_${ids}_$np.log; fail "predict ($ids, $np ranks) failed"; }
    done
  done
  $py - <<'PY' || fail "ids without an id feature are not the global record indices"
import h5py, numpy as np
for np_ in (1, 3):
    with h5py.File(f"p_id_{np_}.h5") as a, h5py.File(f"p_none_{np_}.h5") as b:
        assert np.array_equal(a["ids"][:], np.arange(640)), "convert's ids"
        assert np.array_equal(b["ids"][:], np.arange(640)), (np_, b["ids"][:8], b["ids"][-3:])
        assert np.array_equal(a["probabilities"][:], b["probabilities"][:]), "other records"
PY
  ;;
slow_checkpoint)
  # Rank 0 takes 3 s over each checkpoint, dist.watchdog_seconds = 1: the others wait on it
  # (it answers busy) instead of ending a healthy job (item 8). A hang still ends the job
  # (train_runs.sh hang).
  rc=0
  SHARDFLOW_TEST_FAULT=slow_checkpoint:0:3000 train 2 a.log --output run --train.epochs=1 \
    --checkpoint.every_steps=5 --dist.watchdog_seconds=1 || rc=$?
  [ $rc -eq 0 ] || { cat a.log; fail "exit $rc with a slow checkpoint"; }
  grep -q "SHARDFLOW_TEST_FAULT: rank 0 sleeps 3000 ms before writing a checkpoint" a.log ||
    { cat a.log; fail "the fault was not injected"; }
  grep -E -q "^\[rank 1\] watchdog: collective #[0-9]+ .* waits past 1\.0 s on busy ranks \[0\]" a.log ||
    { cat a.log; fail "no line saying rank 1 waits on busy rank 0"; }
  got=$(cd run/checkpoints && ls | tr '\n' ' ')
  [ "$got" = "ckpt-000000005.h5 ckpt-000000010.h5 " ] || fail "checkpoints '$got'"
  ;;
checkpoint_dir)
  # An unusable checkpoint.dir is found at start-up, before any training (item 9).
  touch plain_file
  rc=0
  train 2 a.log --output run --checkpoint.dir=plain_file/ckpt || rc=$?
  [ $rc -eq 1 ] || { cat a.log; fail "exit $rc with checkpoint.dir under a file, wanted 1 (I/O)"; }
  n=$(grep -c "error: " a.log || true)
  m=$(grep -E -c "error: I/O error: cannot create the checkpoint folder: Not a directory \(errno 20\) \[file=plain_file/ckpt key=checkpoint\.dir\]" a.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat a.log; fail "wanted one error line naming the folder"; }
  [ ! -e run/metrics.jsonl ] || fail "it trained before finding the folder unusable"
  ;;
killed_writer)
  # A run killed after its checkpoint at step 10 (rank 1 dies at step 14), with an unfinished
  # checkpoint file left behind: the resume removes the .tmp file and metrics.jsonl ends with
  # one line per step, 1..20 (the steps past 10 used to appear twice) (item 10).
  rc=0
  SHARDFLOW_TEST_FAULT=kill:1:13 train 2 a.log --output run --checkpoint.every_steps=5 \
    --dist.watchdog_seconds=3 || rc=$?
  [ $rc -ne 0 ] || { cat a.log; fail "the killed run exited 0"; }
  [ -f run/checkpoints/ckpt-000000010.h5 ] || { cat a.log; fail "no checkpoint at step 10"; }
  touch run/checkpoints/ckpt-000000015.h5.tmp.99999
  train 2 b.log --output run --resume --checkpoint.every_steps=5 || { cat b.log; fail "resume failed"; }
  grep -q "resuming from run/checkpoints/ckpt-000000010.h5 at step 10" b.log ||
    { cat b.log; fail "no resume line"; }
  grep -q "removed run/checkpoints/ckpt-000000015.h5.tmp.99999, a checkpoint its killed writer left unfinished" b.log ||
    { cat b.log; fail "no line saying the unfinished checkpoint was removed"; }
  [ ! -e run/checkpoints/ckpt-000000015.h5.tmp.99999 ] || fail "the .tmp file is still there"
  got=$($py -c 'import json; print(" ".join(str(json.loads(l)["step"]) for l in open("run/metrics.jsonl") if "\"loss\"" in l))')
  [ "$got" = "$(seq -s ' ' 1 20)" ] || fail "metrics.jsonl training steps '$got', wanted 1..20 once each"
  ;;
header_flip)
  # A flipped byte in the root object header of the newest checkpoint: --resume falls back to
  # the earlier one, and shardflow-inspect verify calls the file damaged, exit 3 (it exited 2,
  # usage) (item 11; the loader's side is io_unit_tests CheckpointHeaderDamage).
  train 2 a.log --output run --checkpoint.every_steps=5 --train.max_steps=10 ||
    { cat a.log; fail "training failed"; }
  f=run/checkpoints/ckpt-000000010.h5
  $py - "$f" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
at = b.find(b"OHDR")  # the root group's object header
b[at + 12] ^= 0xFF
open(p, "wb").write(b)
PY
  rc=0
  "$bin/shardflow-inspect" verify "$f" >v.log 2>&1 || rc=$?
  [ $rc -eq 3 ] || { cat v.log; fail "inspect verify: exit $rc on a damaged header, wanted 3"; }
  grep -q "HDF5 cannot list the objects" v.log || { cat v.log; fail "no line saying so"; }
  train 2 b.log --output run --resume --train.max_steps=0 || { cat b.log; fail "resume failed"; }
  grep -q "skipping checkpoint run/checkpoints/ckpt-000000010.h5: data loss" b.log ||
    { cat b.log; fail "the damaged checkpoint was not skipped as data loss"; }
  grep -q "resuming from run/checkpoints/ckpt-000000005.h5 at step 5" b.log ||
    { cat b.log; fail "no fallback to step 5"; }
  ;;
tfrecord_damage)
  # A damaged length field (record 5 of one shard) and a truncated shard: training names the
  # cause and record that shardflow-inspect verify names (it said "runs past the end of the
  # file" at the next record), and on_corrupt = skip trains on the good records (it failed in
  # the counting pass) (item 12).
  mkdir -p bad trunc
  cp data/fm-*.tfrecord bad/
  cp data/fm-*.tfrecord trunc/
  $py - bad/fm-00003-of-00008.tfrecord trunc/fm-00005-of-00008.tfrecord <<'PY'
import os, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = 0
for _ in range(5):
    at += 16 + struct.unpack("<Q", b[at:at + 8])[0]
b[at + 1] ^= 0x40  # record 5's length: its length CRC no longer matches
open(sys.argv[1], "wb").write(b)
os.truncate(sys.argv[2], os.path.getsize(sys.argv[2]) - 100)  # ends inside the last record
PY
  for case in bad trunc; do
    f=bad/fm-00003-of-00008.tfrecord
    [ $case = trunc ] && f=trunc/fm-00005-of-00008.tfrecord
    rc=0
    "$bin/shardflow-inspect" verify "$f" >v_$case.log 2>&1 || rc=$?
    [ $rc -eq 3 ] || { cat v_$case.log; fail "verify $case: exit $rc"; }
    # "F: data loss at byte O (record R): CAUSE" -> "CAUSE [file=F offset=O record=R]"
    want=$(sed -E -n 's/^(.*): data loss at byte ([0-9]+) \(record ([0-9]+)\): (.*)$/\4 [file=\1 offset=\2 record=\3]/p' v_$case.log)
    [ -n "$want" ] || { cat v_$case.log; fail "no verify line for $case"; }
    rc=0
    train 2 f_$case.log --output run_f_$case --data.files="$case/fm-*.tfrecord" --train.epochs=1 || rc=$?
    [ $rc -eq 3 ] || { cat f_$case.log; fail "$case, on_corrupt=fail: exit $rc, wanted 3"; }
    n=$(grep -c "error: " f_$case.log || true)
    m=$(grep -c -F "error: data loss: $want" f_$case.log || true)
    [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat f_$case.log; fail "$case: wanted one line 'error: data loss: $want'"; }
    train 2 s_$case.log --output run_s_$case --data.files="$case/fm-*.tfrecord" --train.epochs=1 \
      --data.on_corrupt=skip || { cat s_$case.log; fail "$case, on_corrupt=skip failed"; }
    grep -q "skipped .* damaged bytes" s_$case.log || { cat s_$case.log; fail "$case: no skipped line"; }
  done
  ;;
folders)
  # A directory given as a data file, or as --config: a usage error saying so (exit 2); it was
  # "data loss ... truncated record header" (exit 3), and an empty config (item 13).
  mkdir -p data/sub.tfrecord
  rc=0
  train 2 a.log --output run --data.files='data/*.tfrecord' || rc=$?
  [ $rc -eq 2 ] || { cat a.log; fail "a folder among the data files: exit $rc, wanted 2"; }
  n=$(grep -c "error: " a.log || true)
  m=$(grep -c "error: invalid argument: a data file is a directory \[file=data/sub.tfrecord key=data.files\]" a.log || true)
  [ "$n" -eq 1 ] && [ "$m" -eq 1 ] || { cat a.log; fail "wanted one line naming the folder"; }
  rmdir data/sub.tfrecord
  rc=0
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-train" --config data --output run >b.log 2>&1 || rc=$?
  [ $rc -eq 2 ] || { cat b.log; fail "--config DIR: exit $rc, wanted 2"; }
  grep -q "error: invalid argument: the config file is a directory \[file=data\]" b.log ||
    { cat b.log; fail "--config DIR: no line saying so"; }
  ;;
label_range)
  # Labels 0..9 on a 5-class model: the error names the label, the file and record (it named
  # only the batch row, "record=52", and no file) (item 14).
  rc=0
  train 2 a.log --output run --model.spec='flatten, dense:32, relu, dense:5' || rc=$?
  [ $rc -eq 2 ] || { cat a.log; fail "exit $rc, wanted 2"; }
  n=$(grep -c "error: " a.log || true)
  [ "$n" -ge 1 ] || { cat a.log; fail "no error line"; }
  grep "error: " a.log | grep -E -q "error: invalid argument: (stage 'decode': )?label [5-9] is outside \[0, 5\), the model's classes \[file=data/fm-0000[0-7]-of-00008\.tfrecord offset=[0-9]+ record=[0-9]+ .*key=label\]" ||
    { cat a.log; fail "the error does not name the label, file and record"; }
  ;;
*) fail "unknown mode" ;;
esac
echo "integrity_runs.sh $mode: ok"
