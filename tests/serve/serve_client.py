#!/usr/bin/env python3
"""Client side of serve_e2e.sh (standard library only, plus h5py/numpy for the offline file).

  serve_client.py api PORT WORK        endpoints, predictions vs shardflow-predict, bad requests
  serve_client.py reload PORT WORK     reload under load: sent == answered
  serve_client.py drain PORT WORK PID  queue full -> 503; SIGTERM answers the queued request
  serve_client.py reconstruct PORT WORK  an autoencoder's errors vs shardflow-predict
  serve_client.py ports BASE WORK N    N ranks answer on BASE..BASE+N-1
  serve_client.py keepalive PORT WORK  more keep-alive clients than serve.http_threads (4):
                                       idle ones hold no thread, every request answered 200 or
                                       503 at once; framing (bad Content-Length, form-encoded
                                       bodies over 8 KiB, 413 naming the size); 404 in /metrics;
                                       a reload of a checkpoint of another model: 400
  serve_client.py drain_keepalive PORT WORK PID  SIGTERM while keep-alive clients have requests
                                       in flight: every request sent gets a response
"""
import base64
import gzip
import http.client
import json
import os
import shutil
import signal
import struct
import sys
import threading
import socket
import time
import urllib.error
import urllib.request
import zlib

MODEL = "/v1/models/default"


def fail(msg):
    print("serve_client: " + msg, file=sys.stderr)
    print("serve_client: " + msg)  # also where the test's output tail keeps it
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)  # client threads may still run


class Client:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        data = r.read()
        return r.status, dict(r.getheaders()), data


def images(n):
    """The first n Fashion-MNIST test images, as shardflow-convert numbered them (id = index)."""
    with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        raw = f.read(n * rows * cols)
    return [raw[i * 784:(i + 1) * 784] for i in range(n)]


def png(pixels, w=28, h=28):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\0" + pixels[y * w:(y + 1) * w] for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def encode(img, style):
    """One instance in one of the accepted forms."""
    px = list(img)
    if style == 0:
        return [[[px[y * 28 + x]] for x in range(28)] for y in range(28)]
    if style == 1:
        return px
    if style == 2:
        return {"image_raw": px}
    if style == 3:
        return {"b64": base64.b64encode(bytes(img)).decode()}
    return {"b64": base64.b64encode(png(img)).decode()}


def check_api(port, work):
    import h5py
    import numpy as np
    c = Client(port)
    s, _, body = c.call("GET", MODEL)
    st = json.loads(body)["model_version_status"][0]
    if s != 200 or st["version"] != "4" or st["state"] != "AVAILABLE":
        fail(f"status: {s} {body!r}")
    s, _, body = c.call("GET", MODEL + "/metadata")
    sig = json.loads(body)["metadata"]["signature_def"]["signature_def"]["serving_default"]
    inp = sig["inputs"]["image_raw"]
    dims = [d["size"] for d in inp["tensor_shape"]["dim"]]
    if s != 200 or inp["dtype"] != "DT_UINT8" or dims != ["-1", "28", "28", "1"]:
        fail(f"metadata input: {s} {inp}")
    if sig["outputs"]["probabilities"]["dtype"] != "DT_FLOAT" or "classes" not in sig["outputs"]:
        fail(f"metadata outputs: {sig['outputs']}")
    for method, path in (("GET", "/v1/models/other"), ("GET", "/v1/models/other/metadata"),
                         ("POST", "/v1/models/other:predict"), ("GET", "/nowhere")):
        s, _, body = c.call(method, path, {"instances": [[0] * 784]} if method == "POST" else None)
        if s != 404 or "error" not in json.loads(body):
            fail(f"{method} {path}: {s} {body!r}")

    imgs = images(300)
    got = {}
    lock = threading.Lock()
    errors = []

    def worker(t):
        cl = Client(port)
        start = t * 40
        i, g = start, 0
        while i < min(start + 40, 300):
            ids = list(range(i, min(i + 1 + (g + t) % 3, start + 40, 300)))
            style = (g + t) % 5
            insts = [encode(imgs[j], style) for j in ids]
            columnar = g % 4 == 3 and style in (1, 3)
            req = {"inputs": insts} if columnar else {"instances": insts}
            s, _, body = cl.call("POST", MODEL + ":predict", req)
            if s != 200:
                errors.append(f"{ids}: {s} {body[:200]!r}")
                return
            r = json.loads(body)
            if columnar:
                rows = list(zip(r["outputs"]["classes"], r["outputs"]["probabilities"]))
            else:
                rows = [(p["classes"], p["probabilities"]) for p in r["predictions"]]
            with lock:
                for j, row in zip(ids, rows):
                    got[j] = row
            i, g = ids[-1] + 1, g + 1

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("predict: " + "; ".join(errors[:3]))
    with h5py.File(f"{work}/offline.h5", "r") as f:
        ids, classes, probs = f["ids"][:], f["classes"][:], f["probabilities"][:]
    if sorted(got) != list(ids):
        fail(f"served {len(got)} records, offline {len(ids)}")
    served = np.array([got[int(i)][1] for i in ids], dtype=np.float32)
    served_classes = np.array([got[int(i)][0] for i in ids])
    if not np.array_equal(served_classes, classes):
        fail("served classes differ from shardflow-predict's")
    diff = np.abs(served - probs).max()
    same = int((served == probs).all(axis=1).sum())
    print(f"predictions: 300 records, classes equal, max |p - p_offline| = {diff:.3g}, "
          f"{same} of 300 rows bitwise equal")
    if diff > 1e-6:
        fail(f"probabilities differ from shardflow-predict's by {diff}")

    bad = [
        ({"instances": [[0] * 784, [0] * 783]}, "instances[1]: field \"image_raw\""),
        ({"instances": [[0] * 783 + [256]]}, "instances[0]: field \"image_raw\": expected uint8"),
        ({"instances": [[0] * 783 + ["x"]]}, "instances[0]: field \"image_raw\": expected a number"),
        ({"instances": [[0] * 784, {"pixels": [0] * 784}]}, "instances[1]: unknown field \"pixels\""),
        ({"instances": [{}]}, "instances[0]: missing field \"image_raw\""),
        ({"inputs": {"pixels": []}}, "inputs: unknown field \"pixels\""),
        ({"instances": [{"b64": "AAAA"}]}, "instances[0]: field \"image_raw\": raw bytes"),
        ({"rows": []}, "unknown field \"rows\""),
        ({}, "missing field \"instances\""),
        ('{"instances": [[1, 2]', "malformed JSON"),
        ("", "malformed JSON"),
    ]
    for body, want in bad:
        s, _, resp = c.call("POST", MODEL + ":predict", body)
        err = json.loads(resp).get("error", "")
        if s != 400 or want not in err:
            fail(f"bad request {str(body)[:60]!r}: {s} {err!r}, expected 400 with {want!r}")
    s, _, resp = c.call("POST", MODEL + ":predict", '{"instances": [' + "0," * 150000 + "0]}")
    if s != 413 or "max_body_bytes" not in json.loads(resp).get("error", ""):
        fail(f"oversized body: {s} {resp[:200]!r}")
    c = Client(port)  # the library closes a connection after a 413
    s, _, text = c.call("GET", "/metrics")
    text = text.decode()
    for line in ('shardflow_serve_responses_total{code="200"}',
                 'shardflow_serve_responses_total{code="400"} 11',
                 'shardflow_serve_responses_total{code="413"} 1',
                 'shardflow_serve_http_responses_total{code="404"} 4',
                 'shardflow_serve_request_latency_quantile_seconds{quantile="0.99"}',
                 "shardflow_serve_batch_size_count", "shardflow_serve_queue_depth 0",
                 "shardflow_serve_model_version 4"):
        if line not in text:
            fail(f"/metrics lacks {line!r}")
    print("api: ok")


def check_reload(port, work):
    stop = threading.Event()
    counts = {"sent": 0, "ok": 0, "other": []}
    versions = set()
    lock = threading.Lock()
    req = json.dumps({"instances": [[7] * 784]})

    def worker():
        cl = Client(port)
        while not stop.is_set():
            with lock:
                counts["sent"] += 1
            try:
                s, h, body = cl.call("POST", MODEL + ":predict", req)
            except OSError as e:
                with lock:
                    counts["other"].append(repr(e))
                continue
            with lock:
                if s == 200:
                    counts["ok"] += 1
                    versions.add(h.get("X-Model-Version"))
                else:
                    counts["other"].append(f"{s} {body[:100]!r}")

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    c = Client(port)
    time.sleep(0.4)
    s, _, body = c.call("POST", MODEL + ":reload")
    if s != 200 or json.loads(body)["version"] != "4":
        fail(f"reload: {s} {body!r}")
    time.sleep(0.4)
    ckdir = f"{work}/run/checkpoints"
    newest = sorted(os.listdir(f"{work}/run8/checkpoints"))[-1]
    new_version = str(int(newest[len("ckpt-"):-len(".h5")]))
    if new_version == "4":
        fail("the second training run wrote step 4 too")
    shutil.copy(f"{work}/run8/checkpoints/{newest}", f"{ckdir}/incoming.tmp")
    os.rename(f"{ckdir}/incoming.tmp", f"{ckdir}/{newest}")
    deadline = time.time() + 10
    while time.time() < deadline:
        s, _, body = c.call("GET", MODEL)
        if json.loads(body)["model_version_status"][0]["version"] == new_version:
            break
        time.sleep(0.05)
    else:
        fail("the watched directory's new checkpoint was not served within 10 s")
    time.sleep(0.4)
    stop.set()
    for t in threads:
        t.join()
    print(f"reload: sent {counts['sent']}, answered 200 {counts['ok']}, versions {sorted(versions)}")
    if counts["other"] or counts["ok"] != counts["sent"]:
        fail(f"requests not answered 200: {counts['other'][:3]}")
    if not {"4", new_version} <= versions:
        fail(f"versions served {versions}, expected 4 and {new_version}")
    s, _, text = c.call("GET", "/metrics")
    if f"shardflow_serve_model_version {new_version}\n" not in text.decode():
        fail(f"/metrics does not show version {new_version}")


def check_drain(port, work, pid):
    result = {}

    def queued():
        cl = Client(port)
        t0 = time.time()
        result["status"], _, body = cl.call(
            "POST", MODEL + ":predict", {"instances": [[1] * 784, [2] * 784]})
        result["seconds"] = time.time() - t0
        result["body"] = body

    t = threading.Thread(target=queued)
    t.start()
    c = Client(port)
    deadline = time.time() + 5
    while time.time() < deadline:  # the first request sits in the queue (3 s batch timeout)
        s, _, text = c.call("GET", "/metrics")
        if "shardflow_serve_queue_depth 2\n" in text.decode():
            break
        time.sleep(0.02)
    else:
        fail("the first request never showed in the queue depth")
    s, h, body = c.call("POST", MODEL + ":predict", {"instances": [[3] * 784]})
    if s != 503 or h.get("Retry-After") != "1" or "queue full" not in json.loads(body)["error"]:
        fail(f"full queue: {s} {h} {body!r}")
    s, _, body = c.call("POST", MODEL + ":predict", {"instances": [[3] * 784] * 3})
    if s != 400 or "more than serve.queue_capacity (2)" not in json.loads(body)["error"]:
        fail(f"request larger than the queue: {s} {body!r}")
    os.kill(pid, signal.SIGTERM)
    t.join()
    if result.get("status") != 200 or len(json.loads(result["body"])["predictions"]) != 2:
        fail(f"queued request after SIGTERM: {result}")
    if result["seconds"] > 2.5:
        fail(f"the queued request waited {result['seconds']:.2f} s: draining did not flush")
    print(f"drain: queued request answered 200 after SIGTERM in {result['seconds']:.2f} s")


def check_reconstruct(port, work):
    """An autoencoder's per-record errors, row and columnar, against shardflow-predict's CSV."""
    import csv
    with open(f"{work}/ae.csv", newline="") as fh:
        offline = {int(r["id"]): float(r["error"]) for r in csv.DictReader(fh)}
    imgs = images(50)
    c = Client(port)
    s, _, body = c.call("POST", MODEL + ":predict", {"instances": [list(i) for i in imgs[:25]]})
    if s != 200:
        fail(f"reconstruct row: {s} {body[:200]!r}")
    errors = [p["error"] for p in json.loads(body)["predictions"]]
    s, _, body = c.call("POST", MODEL + ":predict", {"inputs": [list(i) for i in imgs[25:]]})
    if s != 200:
        fail(f"reconstruct columnar: {s} {body[:200]!r}")
    errors += json.loads(body)["outputs"]["error"]
    worst = max(abs(e - offline[i]) / max(offline[i], 1e-12) for i, e in enumerate(errors))
    print(f"reconstruct: 50 records, max relative difference from shardflow-predict {worst:.3g}")
    if worst > 1e-6:
        fail(f"reconstruction errors differ from shardflow-predict's by {worst}")


def check_ports(base, n):
    for rank in range(n):
        deadline = time.time() + 20
        while True:
            try:
                s, _, body = Client(base + rank).call("GET", MODEL)
                if s == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                fail(f"rank {rank}: nothing answers on port {base + rank}")
            time.sleep(0.1)

class _SharedFile:
    """One buffered reader shared by successive responses of a connection (pipelining)."""
    def __init__(self, f):
        self.f = f

    def makefile(self, mode):
        return self

    def __getattr__(self, name):
        return getattr(self.f, name)

    def close(self):
        pass


def read_responses(sock, n):
    """The next n responses on a raw socket: (status, headers, body text)."""
    shared = _SharedFile(sock.makefile("rb"))
    out = []
    for _ in range(n):
        r = http.client.HTTPResponse(shared)
        r.begin()
        out.append((r.status, dict(r.getheaders()), r.read().decode()))
    return out


def predict_request(body):
    return (f"POST {MODEL}:predict HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}").encode()


def check_keepalive_load(port):
    """Idle keep-alive connections hold no thread; more busy clients than threads: 200 or 503."""
    idle = [Client(port) for _ in range(8)]  # twice serve.http_threads (4)
    for c in idle:
        if c.call("GET", MODEL)[0] != 200:
            fail("an idle client's first request failed")
    t0 = time.time()
    c = Client(port)
    c.conn.timeout = 5
    s, _, _ = c.call("GET", MODEL)
    took = time.time() - t0
    if s != 200 or took > 1.0:
        fail(f"a new client behind 8 idle keep-alive connections: {s} after {took:.2f} s")
    req = json.dumps({"instances": [[7] * 784]})
    results = []
    lock = threading.Lock()

    def worker():
        cl = Client(port)
        cl.conn.timeout = 10
        for _ in range(5):
            t = time.time()
            try:
                st, h, body = cl.call("POST", MODEL + ":predict", req)
                row = (st, h.get("Retry-After"), time.time() - t, body[:100])
            except OSError as e:
                row = ("no answer", repr(e), time.time() - t, b"")
            with lock:
                results.append(row)

    threads = [threading.Thread(target=worker) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [r for r in results if r[0] not in (200, 503) or (r[0] == 503 and r[1] != "1")
           or r[2] > 5]
    ok = sum(1 for r in results if r[0] == 200)
    slowest = max(r[2] for r in results)
    print(f"keepalive: 12 clients x 5 requests on 4 HTTP threads: {ok} answered 200, "
          f"{len(results) - ok} 503, slowest {slowest:.2f} s")
    if len(results) != 60 or bad or ok == 0:
        fail(f"keep-alive load: {len(results)} of 60 answered; bad: {bad[:3]}")
    for c in idle:  # still open and served
        if c.call("GET", MODEL)[0] != 200:
            fail("an idle keep-alive connection was not served after the load")


def check_framing(port):
    """A bad Content-Length, a form-encoded body over 8 KiB, a body over serve.max_body_bytes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"POST {MODEL}:predict HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n"
                 "{}".encode())
    [(s, h, body)] = read_responses(sock, 1)
    err = json.loads(body).get("error", "")
    if s != 400 or 'bad Content-Length header "abc"' not in err or h.get("Connection") != "close":
        fail(f"Content-Length: abc: {s} {h} {body!r}")
    sock.close()
    url = f"http://127.0.0.1:{port}{MODEL}:predict"
    big = json.dumps({"instances": [list(i) for i in images(3)]})
    if len(big) <= 8192:
        fail(f"the form-encoded body is {len(big)} bytes, not over 8 KiB")
    # What urllib (and curl -d) send by default.
    r = urllib.request.Request(
        url, data=big.encode(), headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(r, timeout=10) as resp:
        if resp.status != 200 or len(json.loads(resp.read())["predictions"]) != 3:
            fail(f"form-encoded body of {len(big)} bytes: {resp.status}")
    huge = '{"instances": [' + "0," * 150000 + "0]}"
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=huge.encode()), timeout=10)
        fail("a body over serve.max_body_bytes was accepted")
    except urllib.error.HTTPError as e:
        want = (f"request body of {len(huge)} bytes (Content-Length) exceeds "
                "serve.max_body_bytes (200000 bytes)")
        err = json.loads(e.read()).get("error", "")
        if e.code != 413 or want not in err:
            fail(f"oversized body: {e.code} {err!r}, expected 413 with {want!r}")
    print(f"framing: bad Content-Length 400, form-encoded {len(big)} bytes 200, "
          f"{len(huge)} bytes 413")


def check_keepalive(port, work):
    check_keepalive_load(port)
    check_framing(port)
    c = Client(port)
    if c.call("GET", "/nowhere")[0] != 404:
        fail("GET /nowhere is not 404")
    text = c.call("GET", "/metrics")[2].decode()
    for line in ('shardflow_serve_http_responses_total{code="404"} 1\n',
                 'shardflow_serve_http_responses_total{code="400"} 1\n',
                 'shardflow_serve_http_responses_total{code="413"} 1\n'):
        if line not in text:
            fail(f"/metrics lacks {line!r}")
    # A checkpoint of another model in the served directory: the reload is the client's error.
    ckdir = f"{work}/ka/checkpoints"
    other = sorted(os.listdir(f"{work}/other/checkpoints"))[-1]
    shutil.copy(f"{work}/other/checkpoints/{other}", f"{ckdir}/ckpt-000000099.h5")
    s, _, body = c.call("POST", MODEL + ":reload")
    err = json.loads(body).get("error", "")
    os.remove(f"{ckdir}/ckpt-000000099.h5")
    if s != 400 or "reload failed, still serving version 4: invalid argument:" not in err:
        fail(f"reload of another model's checkpoint: {s} {err!r}, expected 400")
    s, _, body = c.call("GET", MODEL)
    if json.loads(body)["model_version_status"][0]["version"] != "4":
        fail(f"after a failed reload: {body!r}")
    print(f"reload of another model's checkpoint: 400 {err[:120]}...")


def check_drain_keepalive(port, work, pid):
    """SIGTERM while 2 pipelined requests and 10 keep-alive clients (4 HTTP threads) are in
    flight: every request sent gets a response (200, or 503 at once when no thread was free;
    the second pipelined one is read during the drain); idle connections are closed."""
    idle = [Client(port) for _ in range(3)]
    for c in idle:
        if c.call("GET", MODEL)[0] != 200:
            fail("an idle client's first request failed")
    body = json.dumps({"instances": [[5] * 784]})
    results = {}
    sent = [threading.Event() for _ in range(10)]

    def worker(i):
        cl = Client(port)
        cl.conn.timeout = 15
        try:
            cl.conn.request("POST", MODEL + ":predict", body=body,
                            headers={"Content-Type": "application/json"})
            sent[i].set()
            r = cl.conn.getresponse()
            results[i] = (r.status, r.getheader("Retry-After"), r.getheader("Connection"),
                          r.read()[:100], time.time())
        except OSError as e:
            results[i] = ("no answer", repr(e), None, b"", time.time())
            sent[i].set()

    # Two pipelined requests in one write: the first takes a thread, the second stays in the
    # connection's buffer until the first is answered, after SIGTERM.
    raw = socket.create_connection(("127.0.0.1", port), timeout=15)
    raw.sendall(predict_request(body) * 2)
    time.sleep(0.2)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for e in sent:
        e.wait(10)
    time.sleep(0.3)  # the first four wait in the model queue (3 s batch timeout)
    t0 = time.time()
    os.kill(pid, signal.SIGTERM)
    for t in threads:
        t.join(20)
    pipelined = read_responses(raw, 2)
    answered = [r for r in results.values() if r[0] in (200, 503)]
    late = [r for r in answered if r[0] == 200 and r[4] - t0 > 2.5]
    statuses = sorted(r[0] for r in answered) + [p[0] for p in pipelined]
    print(f"drain with keep-alive clients: statuses {statuses}")
    if len(answered) != 10 or late:
        fail(f"after SIGTERM: {len(answered)} of 10 answered, late: {late[:2]}, "
             f"not answered: {[r for r in results.values() if r[0] not in (200, 503)][:3]}")
    if [r for r in answered if r[0] == 503 and r[1] != "1"]:
        fail("a 503 without Retry-After: 1")
    if sum(1 for r in answered if r[0] == 200) < 4 or [r for r in answered
                                                       if r[0] == 200 and r[2] != "close"]:
        fail(f"the requests held at SIGTERM: {answered}")
    if ([p[0] for p in pipelined] != [200, 200] or
            [p[1].get("Connection") for p in pipelined] != ["keep-alive", "close"]):
        fail(f"pipelined requests: {pipelined}")
    for c in idle:
        c.conn.sock.settimeout(5)
        if c.conn.sock.recv(1) != b"":
            fail("an idle keep-alive connection was not closed by the drain")


def main():
    mode, port, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "api":
        check_api(port, work)
    elif mode == "reload":
        check_reload(port, work)
    elif mode == "drain":
        check_drain(port, work, int(sys.argv[4]))
    elif mode == "reconstruct":
        check_reconstruct(port, work)
    elif mode == "ports":
        check_ports(port, int(sys.argv[4]))
    elif mode == "keepalive":
        check_keepalive(port, work)
    elif mode == "drain_keepalive":
        check_drain_keepalive(port, work, int(sys.argv[4]))


if __name__ == "__main__":
    main()
