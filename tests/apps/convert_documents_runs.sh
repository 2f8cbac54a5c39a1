#!/usr/bin/env bash
# Text documents for a language model, end to end (issue 50), under mpiexec:
#   lm   shardflow-convert --input.format=documents on fortune-style files (% lines, an empty
#        document, bytes that are not UTF-8, CRLF lines): byte-identical shards for np 1 and 3;
#        the train and held-out blocks are exactly the documents' bytes joined by the end token
#        (a Python reference of the split, the held-out rule and the packing); then
#        shardflow-train trains a one-block causal transformer on them for one epoch on 2 ranks
#        and evaluates on the held-out blocks (per-token loss and next-token accuracy);
#        shardflow-predict --generate samples text after a prompt (the same text for a seed),
#        and writes each held-out block's loss (their mean the trainer's eval loss).
#   classify  one record per document labelled by its file (padded, cut and counted, or an
#        error under too_long = fail), against a Python reference; a padded encoder trains on it.
#   bpe  byte-pair encoding learned from the documents: the same shards and vocabulary files at
#        np 1 and 3, and the written files read back give the same shards; WordPiece over a
#        BERT vocab.txt ([SEP] ends documents, unknown words counted).
#   pipeline  the documents as JSON lines tokenized and bucketed in the input pipeline and
#        trained on 2 ranks (also on batches padded to their longest, shorter than the
#        context); predict and serve (strings) agree; a language model from the same lines
#        packed into blocks in the pipeline; keys that do not fit exit 2 naming them.
#   bad  a block longer than the corpus, a missing preprocess.pack, an empty delimiter: exit 2
#        with one line naming the key.
#   convert_documents_runs.sh MODE BIN_DIR WORK_DIR -- MPIEXEC ARGS...
set -euo pipefail
source "$(dirname "$0")/../support/process_test.sh" "$@"
mkdir -p in
$py - <<'PY'
import random
random.seed(7)
words = "the cat sat on a mat and ran off to see the dog who sat there".split()
for f in range(3):
    docs = []
    for d in range(20 + 7 * f):
        docs.append(" ".join(random.choice(words) for _ in range(random.randint(3, 12))))
    docs[3] = "   "  # blank: skipped
    docs[5] = "caf\xe9 \udcff bytes"  # a latin-1 byte and a lone 0xff: not UTF-8
    with open(f"in/f{f}", "wb") as out:
        for i, d in enumerate(docs):
            line_end = b"\r\n" if i == 8 else b"\n"
            out.write(d.encode("latin-1", "surrogateescape") + line_end + b"%" + line_end)
PY
convert() {  # convert NP ARGS...
  local np=$1
  shift
  timeout -k 5 60 "${mpi[@]}" -np "$np" "$bin/shardflow-convert" --input.format=documents \
    "--input.files=in/f*" --input.documents=% "$@" >"convert.np$np.log" 2>&1
}
# train_ok CONFIG OUTPUT LOG [FLAGS...]: shardflow-train on 2 ranks, which must end with a
# held-out loss and accuracy.
train_ok() {
  local config=$1 out=$2 log=$3
  shift 3
  timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-train" --config "$config" --output "$out" \
    --no-progress "$@" >"$log" 2>&1 || fail "train $config $*: $(tail -5 "$log")"
  grep -qE "final: eval loss [0-9.]+, accuracy [01]\.[0-9]+" "$log" ||
    fail "train $config $*: no held-out loss and accuracy: $(tail -5 "$log")"
}
case "$mode" in
lm)
  for np in 1 3; do
    convert $np --preprocess.pack=16 --preprocess.holdout=0.25 --output.shards=3 \
      --output.path=np$np/text || fail "convert -np $np: $(cat convert.np$np.log)"
  done
  diff <(cd np1 && ls) <(cd np3 && ls) || fail "file lists differ"
  for f in np1/*.tfrecord; do cmp "$f" "np3/$(basename "$f")" || fail "$f differs"; done
  grep -q "78 documents (3 empty skipped), 19 held out" convert.np3.log ||
    fail "counts: $(grep documents convert.np3.log)"
  "$bin/shardflow-inspect" cat np1/text-train-*.tfrecord >train.jsonl
  "$bin/shardflow-inspect" cat np1/text-heldout-*.tfrecord >heldout.jsonl
  $py - <<'PY' || fail "blocks differ from the reference"
import json, math
docs = []
for f in range(3):
    for d in open(f"in/f{f}", "rb").read().replace(b"\r\n", b"\n").split(b"\n%\n"):
        if d.strip():
            docs.append(d)
h = 0.25
held = [i for i in range(len(docs)) if math.floor((i + 1) * h) > math.floor(i * h)]
for part, chosen in (("train", [i for i in range(len(docs)) if i not in held]), ("heldout", held)):
    stream = []
    for i in chosen:
        stream += list(docs[i]) + [256]
    blocks = [json.loads(l)["features"] for l in open(part + ".jsonl")]
    assert len(blocks) == (len(stream) - 1) // 16, (part, len(blocks), len(stream))
    for b, f in enumerate(blocks):
        assert f["input"]["int64"] == stream[16 * b:16 * b + 16], (part, b)
        assert f["target"]["int64"] == stream[16 * b + 1:16 * b + 17], (part, b)
        assert f["id"]["int64"] == [b]
meta = json.load(open("np1/text.meta.json"))
assert meta["heldout_baselines_nats_per_token"]["bigram"] < meta["heldout_baselines_nats_per_token"]["unigram"]
PY
  cat >lm.ini <<'INI'
[data]
files = np1/text-train-*.tfrecord
features = input:int64:float32:16, target:int64:int64:16
[eval]
files = np1/text-heldout-*.tfrecord
features = input:int64:float32:16, target:int64:int64:16
[model]
spec = tokens:258:16, block:2:causal, layernorm, dense:258
input_shape = 16
input_feature = input
label_feature = target
init = glorot
[train]
epochs = 1
batch_size = 4
optimizer = adam
lr = 0.003
threads = 1
INI
  train_ok lm.ini run train.log
  # Sampling from the trained model: the prompt, then 40 bytes; a seed gives the same text.
  gen() { "$bin/shardflow-predict" --config lm.ini --checkpoint run/checkpoints \
    --generate "the cat" --predict.generate_tokens=40 "$@" 2>gen.log; }
  a=$(gen --predict.temperature=0.9 --predict.seed=3) || fail "generate: $(cat gen.log)"
  b=$(gen --predict.temperature=0.9 --predict.seed=3) || fail "generate: $(cat gen.log)"
  [ "$a" = "$b" ] || fail "the same seed drew different text: '$a' vs '$b'"
  [ "${a:0:7}" = "the cat" ] && [ "${#a}" -gt 7 ] || fail "generated '$a'"
  g=$(gen --predict.temperature=0) || fail "greedy: $(cat gen.log)"
  [ "${g:0:7}" = "the cat" ] || fail "greedy generated '$g'"
  code=0
  gen --predict.temperature=-1 >/dev/null || code=$?
  [ "$code" = 2 ] || fail "a negative temperature exited $code"
  # shardflow-predict writes a language model's loss per held-out block (nats per token) and
  # its next-token accuracy; their mean is the trainer's held-out loss.
  "$bin/shardflow-predict" --config lm.ini --checkpoint run/checkpoints \
    --input "np1/text-heldout-*.tfrecord" --output p.csv >predict.log 2>&1 ||
    fail "predict on a language model: $(tail -2 predict.log)"
  eval_loss=$(sed -n 's/.*final: eval loss \([0-9.]*\),.*/\1/p' train.log)
  $py - "$eval_loss" <<'PY' || fail "per-block losses differ from the eval loss"
import csv, sys
rows = list(csv.DictReader(open("p.csv")))
assert rows and list(rows[0]) == ["id", "loss", "accuracy"], rows[:1]
assert [int(r["id"]) for r in rows] == list(range(len(rows)))
mean = sum(float(r["loss"]) for r in rows) / len(rows)
assert abs(mean - float(sys.argv[1])) < 1e-3 * max(1.0, mean), (mean, sys.argv[1])
assert all(0 <= float(r["accuracy"]) <= 1 for r in rows)
PY
  grep -qE "^loss: [0-9.]+ nats per token" predict.log || fail "no loss line: $(cat predict.log)"
  # Without the targets there is no loss to write: one line naming the label feature.
  code=0
  "$bin/shardflow-predict" --config lm.ini --checkpoint run/checkpoints --model.label_feature=id \
    --input "np1/text-heldout-*.tfrecord" --output q.csv >predict.log 2>&1 || code=$?
  [ "$code" = 2 ] && grep -q "needs one label per position" predict.log ||
    fail "predict without targets exited $code: $(tail -2 predict.log)"
  ;;
classify)
  # One record per document, labelled by its file: the same shards at np 1 and 3; tokens padded
  # with the pad id, cut at max_tokens (counted), against a Python reference; too_long = fail
  # names the file; then a padded bidirectional encoder trains and evaluates on them.
  for np in 1 3; do
    convert $np --preprocess.max_tokens=24 --preprocess.holdout=0.25 --output.shards=2 \
      --output.path=np$np/cls || fail "convert -np $np: $(cat convert.np$np.log)"
  done
  for f in np1/*.tfrecord; do cmp "$f" "np3/$(basename "$f")" || fail "$f differs"; done
  "$bin/shardflow-inspect" cat np1/cls-train-*.tfrecord np1/cls-heldout-*.tfrecord >cls.jsonl
  $py - <<'PY' || fail "records differ from the reference"
import json, math
docs = []
for f in range(3):
    for d in open(f"in/f{f}", "rb").read().replace(b"\r\n", b"\n").split(b"\n%\n"):
        if d.strip():
            docs.append((d, f))
h = 0.25
held = [i for i in range(len(docs)) if math.floor((i + 1) * h) > math.floor(i * h)]
order = [i for i in range(len(docs)) if i not in held] + held
records = [json.loads(l)["features"] for l in open("cls.jsonl")]
assert len(records) == len(docs), (len(records), len(docs))
cut = 0
for r, i in zip(records, order):
    text, label = docs[i]
    toks = list(text[:24])
    cut += len(text) > 24
    assert r["tokens"]["int64"] == toks + [257] * (24 - len(toks)), i
    assert r["length"]["int64"] == [len(toks)] and r["label"]["int64"] == [label], i
meta = json.load(open("np1/cls.meta.json"))
assert meta["train"]["truncated"] + meta["heldout"]["truncated"] == cut
assert meta["classes"] == ["f0", "f1", "f2"], meta["classes"]
assert 0 <= meta["heldout_baselines_accuracy"]["naive_bayes_bag_of_words"] <= 1
PY
  code=0
  convert 1 --preprocess.max_tokens=24 --preprocess.too_long=fail --output.path=fail/cls || code=$?
  [ "$code" = 2 ] && grep -q "more than preprocess.max_tokens = 24.*file=in/f0" convert.np1.log ||
    fail "too_long=fail exited $code: $(grep error convert.np1.log)"
  cat >cls.ini <<'INI'
[data]
files = np1/cls-train-*.tfrecord
features = tokens:int64:float32:24, label:int64:int64:scalar
[eval]
files = np1/cls-heldout-*.tfrecord
features = tokens:int64:float32:24, label:int64:int64:scalar
[model]
spec = tokens:258:16:257, block:2, layernorm, seqpool:mean, dense:3
input_shape = 24
input_feature = tokens
label_feature = label
init = glorot
[train]
epochs = 1
batch_size = 4
optimizer = adam
lr = 0.003
threads = 1
INI
  train_ok cls.ini run train.log
  # The padded encoder predicts one class per held-out record.
  "$bin/shardflow-predict" --config cls.ini --checkpoint run/checkpoints \
    --input "np1/cls-heldout-*.tfrecord" --output p.csv >predict.log 2>&1 ||
    fail "predict: $(tail -3 predict.log)"
  [ "$(($(wc -l <p.csv) - 1))" = 19 ] || fail "predicted $(wc -l <p.csv) lines for 19 documents"
  ;;
bpe)
  # BPE learned from the training documents: the same shards, vocab.json and merges.txt at np 1
  # and 3; reading those files back (preprocess.bpe_vocab) writes the same shards again.
  for np in 1 3; do
    convert $np --preprocess.pack=8 --preprocess.tokenizer=bpe --preprocess.vocabulary=300 \
      --output.shards=2 --output.path=np$np/text || fail "convert -np $np: $(cat convert.np$np.log)"
  done
  for f in np1/*.tfrecord np1/text.vocab.json np1/text.merges.txt; do
    cmp "$f" "np3/$(basename "$f")" || fail "$f differs"
  done
  convert 1 --preprocess.pack=8 --preprocess.tokenizer=bpe --preprocess.bpe_vocab=np1/text.vocab.json \
    --preprocess.bpe_merges=np1/text.merges.txt --output.shards=2 --output.path=read/text ||
    fail "convert with read files: $(cat convert.np1.log)"
  for f in np1/*.tfrecord; do cmp "$f" "read/$(basename "$f")" || fail "read: $f differs"; done
  grep -q '"learned_merges": 44' np1/text.meta.json || fail "merges: $(grep -A1 bpe np1/text.meta.json)"
  # WordPiece over BERT's vocab.txt layout (the fixture Hugging Face wrote): [SEP] ends each
  # document, unknown words are counted.
  convert 1 --preprocess.pack=8 --preprocess.tokenizer=wordpiece \
    "--preprocess.wordpiece_vocab=$src/tests/fixtures/wordpiece/vocab.txt" --output.shards=1 \
    --output.path=wp/text || fail "wordpiece: $(cat convert.np1.log)"
  grep -q '"end_token": 3' wp/text.meta.json || fail "wordpiece end token: $(cat wp/text.meta.json)"
  grep -qE '"unknown_words": [1-9]' wp/text.meta.json || fail "wordpiece: no unknown words counted"
  ;;
pipeline)
  # The same documents as JSON lines tokenized in the input pipeline (no convert step): byte
  # tokens, bucketed by length (each rank's batches differ in size), a padded encoder trained on
  # 2 ranks and evaluated; a model of another context, or batches shorter than it, exit 2
  # naming the key.
  $py - <<'PY'
import json
held = open("held.jsonl", "w")
for f in range(3):
    docs = open(f"in/f{f}", "rb").read().replace(b"\r\n", b"\n").split(b"\n%\n")
    with open(f"docs{f}.jsonl", "w") as out:
        for i, d in enumerate(docs):
            if d.strip():
                line = json.dumps({"text": d.decode("latin-1"), "label": f}) + "\n"
                (held if i % 4 == 3 else out).write(line)
PY
  cat >pipe.ini <<'INI'
[data]
files = docs*.jsonl
format = jsonl
json_schema = text:bytes, label:int64
shard_policy = record
tokenizer = byte
max_tokens = 24
bucket_boundaries = 8, 16
bucket_batch_sizes = 6, 4, 3
[eval]
files = held.jsonl
format = jsonl
json_schema = text:bytes, label:int64
tokenizer = byte
max_tokens = 24
[model]
spec = tokens:258:16:257, block:2, layernorm, seqpool:mean, dense:3
input_shape = 24
input_feature = tokens
label_feature = label
init = glorot
[train]
epochs = 2
batch_size = 4
optimizer = adam
lr = 0.003
threads = 1
INI
  train_ok pipe.ini run train.log
  grep -qE "rank 1: [0-9]+ documents, [0-9]+ tokens \([0-9]+ cut to max_tokens = 24" train.log ||
    fail "no bucket count: $(grep -m3 data train.log)"
  # shardflow-predict reads the held-out JSON lines through the same tokenizer; shardflow-serve
  # takes the same texts as strings ({"instances": ["..."]}) and answers the same classes.
  "$bin/shardflow-predict" --config pipe.ini --checkpoint run/checkpoints --input held.jsonl \
    --output p.csv >predict.log 2>&1 || fail "predict: $(tail -3 predict.log)"
  "$bin/shardflow-serve" --config pipe.ini --checkpoint run/checkpoints --port 0 \
    --train.threads=1 >serve.log 2>&1 &
  serve_pid=$!
  port=
  for _ in $(seq 200); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' serve.log)
    [ -n "$port" ] && break
    kill -0 "$serve_pid" 2>/dev/null || fail "serve exited: $(tail -3 serve.log)"
    sleep 0.05
  done
  [ -n "$port" ] || fail "serve did not print 'listening on'"
  $py - "$port" <<'PY' || { kill "$serve_pid"; fail "served classes differ from predict's"; }
import csv, json, sys, urllib.request
texts = [json.loads(l)["text"] for l in open("held.jsonl")]
rows = list(csv.DictReader(open("p.csv")))
assert len(rows) == len(texts), (len(rows), len(texts))
url = f"http://127.0.0.1:{sys.argv[1]}/v1/models/default"
meta = json.load(urllib.request.urlopen(url + "/metadata"))
inputs = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
assert inputs["text"]["dtype"] == "DT_STRING", inputs
body = json.dumps({"instances": texts}).encode()
answer = json.load(urllib.request.urlopen(urllib.request.Request(url + ":predict", body)))
served = [p["classes"] for p in answer["predictions"]]
offline = [int(r["class"]) for r in rows]
assert served == offline, (served, offline)
try:
    urllib.request.urlopen(urllib.request.Request(url + ":predict", b'{"instances": [7]}'))
    raise AssertionError("a number was accepted as text")
except urllib.error.HTTPError as e:
    assert e.code == 400 and "expected a string" in e.read().decode(), e
PY
  kill "$serve_pid"
  # The same with batches padded to their longest document, not the context: the model runs
  # on the shorter length.
  train_ok pipe.ini short short.log --data.pad_to=batch
  # A language model from the same JSON lines: documents packed into blocks in the pipeline,
  # residual dropout, the head tied to the embedding; also with 2 tensor-parallel ways.
  cat >lm.ini <<'INI'
[data]
files = docs*.jsonl
format = jsonl
json_schema = text:bytes, label:int64
shard_policy = record
tokenizer = byte
pack = 16
[eval]
files = held.jsonl
format = jsonl
json_schema = text:bytes, label:int64
tokenizer = byte
pack = 16
[model]
spec = tokens:258:16, block:2:causal:0.1, layernorm, lmhead
input_shape = 16
input_feature = input
label_feature = target
init = glorot
[train]
epochs = 1
batch_size = 4
optimizer = adam
lr = 0.003
threads = 1
INI
  train_ok lm.ini lm lm.log
  grep -qE "rank 0: [0-9]+ documents, [0-9]+ tokens .*; [0-9]+ blocks of 16 -> [0-9]+ batches" lm.log ||
    fail "packed LM: no block count: $(grep -m2 blocks lm.log)"
  train_ok lm.ini lm_tp lm_tp.log --dist.tensor_parallel=2
  code=0
  "$bin/shardflow-predict" --config lm.ini --checkpoint lm/checkpoints --input held.jsonl \
    --output lm.csv >predict.log 2>&1 || code=$?
  [ "$code" = 2 ] && grep -q "data.pack" predict.log ||
    fail "predict on packed text exited $code: $(tail -2 predict.log)"
  for bad in "--model.input_shape=16:model.input_shape" \
    "--data.pad_to=batch --dist.pipeline_stages=2:data.pad_to"; do
    code=0
    # shellcheck disable=SC2086 # the flags split at spaces
    timeout -k 5 60 "${mpi[@]}" -np 2 "$bin/shardflow-train" --config pipe.ini --output bad \
      ${bad%%:*} --no-progress >bad.log 2>&1 || code=$?
    [ "$code" = 2 ] && grep -q "${bad##*:}" bad.log || fail "$bad exited $code: $(tail -2 bad.log)"
  done
  ;;
bad)
  expect_bad() {  # expect_bad KEY ARGS...: exit 2, one error line naming KEY (one process)
    local key=$1 code=0
    shift
    timeout -k 5 60 "$bin/shardflow-convert" --input.format=documents "--input.files=in/f*" \
      --input.documents=% "$@" --output.path=bad/text >convert.np1.log 2>&1 || code=$?
    [ "$code" = 2 ] || fail "$* exited $code: $(cat convert.np1.log)"
    [ "$(grep -c 'error:' convert.np1.log)" = 1 ] || fail "$*: $(cat convert.np1.log)"
    grep -q "$key" convert.np1.log || fail "$*: no $key in $(cat convert.np1.log)"
  }
  expect_bad preprocess.pack --preprocess.pack=100000
  expect_bad preprocess.pack
  expect_bad preprocess.pack --preprocess.pack=8 --preprocess.max_tokens=8
  expect_bad input.documents --input.documents= --preprocess.pack=8
  expect_bad preprocess.holdout --preprocess.pack=8 --preprocess.holdout=1
  echo '{"a": 0}' >bad.json
  printf 'a b\n' >bad.txt
  expect_bad bad.json --preprocess.pack=8 --preprocess.tokenizer=bpe \
    --preprocess.bpe_vocab=bad.json --preprocess.bpe_merges=bad.txt
  ;;
*) fail "unknown mode" ;;
esac
echo "convert_documents_runs.sh $mode: ok"
