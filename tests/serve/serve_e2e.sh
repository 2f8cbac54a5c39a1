#!/usr/bin/env bash
# End-to-end test of shardflow-serve over 127.0.0.1 with Python's standard-library HTTP client:
# convert 300 Fashion-MNIST test records, train a tiny MLP (4 steps, and a second run of 8 steps
# for the reload), predict them offline with shardflow-predict, then serve the checkpoint and
#   api:     every endpoint; the served predictions of every record (row and columnar formats,
#            JSON numbers, {"b64"} raw bytes and PNG) equal shardflow-predict's (classes equal,
#            probabilities within 1e-6: batches of other sizes may change summation order);
#            every bad-request class (400 naming instance and field, 404, 413); /metrics;
#   reload:  8 client threads send requests while POST :reload runs and a newer checkpoint
#            appears in the watched directory: the version switches to 8, every request sent is
#            answered 200 (sent == answered);
#   drain:   a request waiting in the queue (long batch timeout), a second one refused 503 with
#            Retry-After (queue full), then SIGTERM: the queued one is answered 200 and the
#            server exits 0;
#   ae:      an autoencoder's per-record errors (row and columnar) equal shardflow-predict's;
#   mpi:     mpirun -np 2 serves on ports P and P+1;
#   device:  the api checks on the simulated CUDA device against shardflow-predict's
#            predictions there; two replicas on a device are refused naming serve.num_replicas.
# Mode http (the connections, with serve.http_threads = 4):
#   port:      a second server on a taken port exits 2 naming the port and the first server's
#              pid, and the first still answers every request;
#   keepalive: idle keep-alive connections hold no thread; 12 keep-alive clients x 5 requests:
#              each answered 200 or 503 + Retry-After within 5 s; a bad Content-Length 400; a
#              form-encoded body over 8 KiB 200; a body over serve.max_body_bytes 413 naming
#              its size; 404s in /metrics; a reload of another model's checkpoint 400;
#   drain:     SIGTERM while 10 keep-alive clients and 2 pipelined requests are in flight:
#              every request sent is answered (200, or 503 at once when no thread was free),
#              idle connections are closed, exit 0.
#   serve_e2e.sh MODE BIN_DIR SCRATCH -- MPIEXEC [ARGS...]     (MODE: all | http)
set -euo pipefail
mode=$1 bin=$2 work=$3
shift 4
mpi=("$@")
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
# The logs, then the reason again: the test's output keeps only the last lines.
fail() {
  echo "serve_e2e: $*" >&2
  for f in "$work"/*.log; do echo "== $f" >&2; tail -n 20 "$f" >&2; done
  echo "serve_e2e: $*" >&2
  exit 1
}
py=/usr/bin/python3
cfg="$src/configs/fmnist_mlp.ini"
export OMPI_MCA_mpi_yield_when_idle=1

"${mpi[@]}" -np 1 "$bin/shardflow-convert" --input.format=idx --input.split=test \
  --input.limit=300 --output.path="$work/data/fm" --output.shards=2 >"$work/convert.log" 2>&1 ||
  fail "convert failed"
train() {  # train OUTPUT STEPS (300 records: 5 steps an epoch)
  "${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
    --eval.files= --train.epochs=2 --train.max_steps="$2" --train.warmup_steps=0 \
    --train.threads=1 --output "$1" --no-progress >"$1.log" 2>&1 || fail "train $1 failed"
}
train "$work/run" 4

pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
# start_server NAME [flags...]: starts shardflow-serve on a free port; sets $port and $pid.
start_server() {
  local name=$1
  shift
  "$bin/shardflow-serve" --config "$cfg" --port 0 --train.threads=1 "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$name.log")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "$name exited before listening"
    sleep 0.05
  done
  fail "$name did not print 'listening on'"
}

client() { timeout 60 "$py" "$src/tests/serve/serve_client.py" "$@"; }

if [ "$mode" = http ]; then
  # Another model's checkpoint (a hidden layer of 16), for the reload that must fail.
  "${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
    --eval.files= --train.epochs=1 --train.max_steps=1 --train.threads=1 \
    --model.spec="flatten, dense:16, relu, dense:10" --output "$work/other" --no-progress \
    >"$work/other.log" 2>&1 || fail "train other failed"
  mkdir -p "$work/ka/checkpoints"
  cp "$work/run/checkpoints/"*.h5 "$work/ka/checkpoints/"
  http=(--serve.http_threads=4 --serve.max_batch_size=8 --serve.batch_timeout_us=2000)
  start_server ka --checkpoint "$work/ka/checkpoints" "${http[@]}" --serve.watch_seconds=0 \
    --serve.max_body_bytes=200000
  grep -q "^http: 4 threads (serve.http_threads), 4 more requests may wait for one (then 503), idle connections closed after 60 s (serve.idle_timeout_seconds)$" \
    "$work/ka.log" || fail "no http line with the threads and the idle timeout"
  # A second server on the taken port: exit 2, one line naming the port and the holder.
  status=0
  timeout 30 "$bin/shardflow-serve" --config "$cfg" --port "$port" --train.threads=1 \
    --checkpoint "$work/ka/checkpoints" >"$work/taken.log" 2>&1 || status=$?
  [ "$status" = 2 ] || fail "a second server on taken port $port: exit $status, expected 2"
  grep -q "^\[rank 0\] error: invalid argument: port $port on 127.0.0.1 is in use, held by pid $pid (shardflow-serve) \[key=--port\]" \
    "$work/taken.log" || fail "the second server's error does not name port $port and pid $pid"
  [ "$(grep -c . "$work/taken.log")" = 1 ] || fail "the second server printed more than one line"
  client keepalive "$port" "$work" || fail "keep-alive checks failed"
  kill -TERM "$pid"
  wait "$pid" || fail "ka server exited $? after SIGTERM"

  start_server drainka --checkpoint "$work/run/checkpoints" --serve.http_threads=4 \
    --serve.max_batch_size=64 --serve.batch_timeout_us=3000000
  client drain_keepalive "$port" "$work" "$pid" || fail "drain with keep-alive clients failed"
  status=0
  wait "$pid" || status=$?
  [ "$status" = 0 ] || fail "SIGTERM with keep-alive clients: exit status $status, expected 0"
  grep -q "^stopped on SIGTERM: [0-9]* requests answered 200, queue drained$" \
    "$work/drainka.log" || fail "no drain line"
  echo "serve_e2e.sh $mode: ok"
  exit 0
fi

train "$work/run8" 8
"${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$work/run/checkpoints" \
  --input "$work/data/fm-*.tfrecord" --output "$work/offline.h5" --train.threads=1 \
  >"$work/predict.log" 2>&1 || fail "predict failed"

# The same API served from the simulated CUDA device (SHARDFLOW_SIMULATE_CUDA=1, --train.device
# = cuda): its predictions equal shardflow-predict's on that device; two replicas are refused.
mkdir -p "$work/dev"
SHARDFLOW_SIMULATE_CUDA=1 "${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$cfg" \
  --checkpoint "$work/run/checkpoints" --input "$work/data/fm-*.tfrecord" \
  --output "$work/dev/offline.h5" --train.threads=1 --train.device=cuda \
  >"$work/predict-dev.log" 2>&1 || fail "predict on the simulated device failed"
SHARDFLOW_SIMULATE_CUDA=1 start_server dev --checkpoint "$work/run/checkpoints" \
  --serve.max_batch_size=8 --serve.batch_timeout_us=2000 --serve.max_body_bytes=200000 \
  --train.device=cuda
grep -q "device: cuda (train.device = cuda: rank 0 on .* takes the simulated device" \
  "$work/dev.log" || fail "the device server has no device line"
client api "$port" "$work/dev" || fail "api checks on the simulated device failed"
kill -TERM "$pid"
wait "$pid" || fail "device server exited $? after SIGTERM"
status=0
SHARDFLOW_SIMULATE_CUDA=1 "$bin/shardflow-serve" --config "$cfg" --port 0 --train.threads=1 \
  --checkpoint "$work/run/checkpoints" --train.device=cuda --serve.num_replicas=2 \
  >"$work/dev2.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "two replicas on a device: exit $status, expected 2"
grep -q "error: invalid argument: train.device = cuda serves with one replica per process, not 2.*\[key=serve.num_replicas\]" \
  "$work/dev2.log" || fail "no error naming serve.num_replicas"

# train.precision = bf16 (issue 48) where the CPU has it: the server says so, and serves what
# shardflow-predict computes in bf16, which is not what it computes in fp32.
mkdir -p "$work/bf16"
if "${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$work/run/checkpoints" \
  --input "$work/data/fm-*.tfrecord" --output "$work/bf16/offline.h5" --train.threads=1 \
  --train.precision=bf16 >"$work/predict-bf16.log" 2>&1; then
  start_server bf16 --checkpoint "$work/run/checkpoints" --serve.max_batch_size=8 \
    --serve.batch_timeout_us=2000 --serve.max_body_bytes=200000 --train.precision=bf16
  grep -q "precision bf16: matrix products on oneDNN" "$work/bf16.log" ||
    fail "the bf16 server does not say it computes in bf16"
  client api "$port" "$work/bf16" || fail "api checks in bf16 failed"
  kill -TERM "$pid"
  wait "$pid" || fail "bf16 server exited $? after SIGTERM"
  "$py" - "$work/offline.h5" "$work/bf16/offline.h5" <<'PY' || fail "bf16 predictions equal fp32's"
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r")["probabilities"][:] for f in sys.argv[1:])
d = float(np.abs(a - b).max())
print(f"bf16 vs fp32 predictions: max |p_bf16 - p_fp32| = {d:.3g}")
sys.exit(0 if 0 < d < 0.05 else 1)
PY
else
  grep -q "train.precision = bf16 cannot run on cpu" "$work/predict-bf16.log" ||
    fail "predict in bf16 failed"
  echo "this CPU has no bf16: the bf16 server is not started here"
fi

start_server api --checkpoint "$work/run/checkpoints" --serve.max_batch_size=8 \
  --serve.batch_timeout_us=2000 --serve.max_body_bytes=200000 --serve.watch_seconds=0.2
client api "$port" "$work" || fail "api checks failed"
client reload "$port" "$work" || fail "reload checks failed"
kill -TERM "$pid"
wait "$pid" || fail "server exited $? after SIGTERM"

start_server drain --checkpoint "$work/run/checkpoints" --serve.max_batch_size=64 \
  --serve.batch_timeout_us=3000000 --serve.queue_capacity=2
client drain "$port" "$work" "$pid" || fail "drain checks failed"
status=0
wait "$pid" || status=$?
[ "$status" = 0 ] || fail "SIGTERM: exit status $status, expected 0"
grep -q "^stopped on SIGTERM: 1 requests answered 200, queue drained$" "$work/drain.log" ||
  fail "no drain line"

# An autoencoder: per-record reconstruction errors as shardflow-predict writes them.
ae=(--model.task=reconstruct --model.input_shape=784 --model.spec="dense:16, relu, dense:784")
"${mpi[@]}" -np 1 "$bin/shardflow-train" --config "$cfg" --data.files="$work/data/fm-*.tfrecord" \
  --eval.files= --train.epochs=1 --train.max_steps=3 --train.threads=1 "${ae[@]}" \
  --output "$work/ae" --no-progress >"$work/ae-train.log" 2>&1 || fail "train ae failed"
"${mpi[@]}" -np 1 "$bin/shardflow-predict" --config "$cfg" --checkpoint "$work/ae/checkpoints" \
  --input "$work/data/fm-*.tfrecord" --output "$work/ae.csv" --train.threads=1 "${ae[@]}" \
  >"$work/ae-predict.log" 2>&1 || fail "predict ae failed"
start_server ae --checkpoint "$work/ae/checkpoints" "${ae[@]}"
client reconstruct "$port" "$work" || fail "reconstruct checks failed"
kill -TERM "$pid"
wait "$pid" || fail "ae server exited $? after SIGTERM"

# Two ranks: ports P and P+1 (P chosen free with P+1).
base=$("$py" -c '
import socket
for p in range(20000, 60000, 97):
    try:
        ss = [socket.socket() for _ in range(2)]
        for i, s in enumerate(ss): s.bind(("127.0.0.1", p + i))
        print(p); break
    except OSError: pass
    finally:
        for s in ss: s.close()')
"${mpi[@]}" -np 2 "$bin/shardflow-serve" --config "$cfg" --checkpoint "$work/run/checkpoints" \
  --port "$base" --train.threads=1 >"$work/mpi.log" 2>&1 &
mpid=$!
pids+=("$mpid")
client ports "$base" "$work" 2 || fail "mpi ports failed"
grep -q "^listening on 127.0.0.1:$((base + 1)) (rank 1 of 2)$" "$work/mpi.log" || fail "no rank 1 line"
kill -TERM "$mpid"
wait "$mpid" || true
echo "serve_e2e.sh $mode: ok"
