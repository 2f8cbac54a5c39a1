#!/usr/bin/env python3
"""Client side of serve_e2e.sh (standard library only, plus h5py/numpy for the offline file).

  serve_client.py api PORT WORK        endpoints, predictions vs shardflow-predict, bad requests
  serve_client.py reload PORT WORK     reload under load: sent == answered
  serve_client.py drain PORT WORK PID  queue full -> 503; SIGTERM answers the queued request
  serve_client.py reconstruct PORT WORK  an autoencoder's errors vs shardflow-predict
  serve_client.py ports BASE WORK N    N ranks answer on BASE..BASE+N-1
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
import time
import zlib

MODEL = "/v1/models/default"


def fail(msg):
    print("serve_client: " + msg, file=sys.stderr)
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


if __name__ == "__main__":
    main()
