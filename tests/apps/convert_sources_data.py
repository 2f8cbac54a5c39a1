#!/usr/bin/env python3
"""Inputs and expectations for convert_sources_runs.sh (standard library only).

  convert_sources_data.py make MODE DIR      write the inputs of MODE (text|jsonl|images|
                                             images_decoded|fixed)
  convert_sources_data.py check MODE DIR CAT  compare `shardflow-inspect cat` JSON lines (CAT)
                                              with the records MODE's inputs must give, by id
"""
import base64, gzip, json, os, struct, sys, zlib


def png(h, w, tag):
    """An RGB PNG of h x w pixels whose first byte is `tag` (a naive encoder)."""
    raw = b""
    for y in range(h):
        row = bytes(((y * w * 3 + i) * 7 + tag) % 256 for i in range(w * 3))
        raw += b"\x00" + row
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def text_files():
    """1001 lines in 7 files: empty, one line, no final newline, CRLF, gzip, empty lines."""
    counts = [0, 1, 150, 200, 250, 200, 200]
    files = {}
    for f, n in enumerate(counts):
        lines = [("" if f == 4 and i % 10 == 3 else "%d:%d" % (f, i)) for i in range(n)]
        sep = "\r\n" if f == 3 else "\n"
        body = "".join(l + sep for l in lines)
        if f == 2:
            body = body[:-1]
        files["part-%d.txt%s" % (f, ".gz" if f == 5 else "")] = (body.encode(), lines)
    return files


def jsonl_files():
    """3 files of 1 + 333 + 167 objects; the object with id 100 is broken (missing 'score')."""
    files, objects, i = {}, [], 0
    for f, n in enumerate([1, 333, 167]):
        out = []
        for _ in range(n):
            o = {"key": i, "score": i / 4.0, "text": "t%d\u00e9" % i, "emb": [i, -i]}
            if i == 100:
                del o["score"]
            else:
                objects.append(o)
            out.append(json.dumps(o))
            i += 1
        files["log-%d.jsonl" % f] = ("\n".join(out) + "\n").encode()
    return files, objects


CLASSES = {"ant": 3, "bee": 2, "cat": 4}  # PNGs per class; bee/img1 is corrupt; cat/photo.jpg
PHOTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "images",
                     "photo.jpg")  # a 64x48 RGB JPEG


def fixed_files():
    """CIFAR-10-like: 1 label byte + 3072 pixel bytes per record, 4-byte header."""
    files, records = {}, []
    for f, n in enumerate([3, 0, 5]):
        recs = [bytes([(f * 7 + k) % 10]) + bytes(((f * 31 + k * 7 + j) % 256) for j in range(3072))
                for k in range(n)]
        files["batch_%d.bin" % f] = b"HDR!" + b"".join(recs)
        records += recs
    return files, records


def make(mode, d):
    os.makedirs(d, exist_ok=True)
    if mode == "text":
        for name, (body, _) in text_files().items():
            open(os.path.join(d, name), "wb").write(gzip.compress(body) if name.endswith(".gz") else body)
    elif mode == "jsonl":
        for name, body in jsonl_files()[0].items():
            open(os.path.join(d, name), "wb").write(body)
    elif mode.startswith("images"):
        tag = 0
        for cls, n in CLASSES.items():
            os.makedirs(os.path.join(d, cls), exist_ok=True)
            for k in range(n):
                data = png(3 + k, 4, tag)
                if cls == "bee" and k == 1:
                    data = data[: len(data) // 2]
                open(os.path.join(d, cls, "img%d.png" % k), "wb").write(data)
                tag += 1
        open(os.path.join(d, "cat", "photo.jpg"), "wb").write(open(PHOTO, "rb").read())
    elif mode == "fixed":
        for name, body in fixed_files()[0].items():
            open(os.path.join(d, name), "wb").write(body)


def check(mode, d, cat):
    recs = {}
    for line in open(cat):
        r = json.loads(line)["features"]
        recs[r["id"]["int64"][0]] = r
    def b(r, k):
        return base64.b64decode(r[k]["bytes"][0])
    if mode == "text":
        want = [l for name, (_, lines) in sorted(text_files().items()) for l in lines]
        got = [b(recs[i], "line").decode() for i in range(len(recs))]
    elif mode == "jsonl":
        objects = jsonl_files()[1]
        want = [(o["key"], o["score"], o["text"], o["emb"]) for o in objects]
        got = [(r["key"]["int64"][0], r["score"]["float"][0], b(r, "text").decode(),
                [int(x) for x in r["emb"]["float"]]) for r in (recs[i] for i in range(len(recs)))]
    elif mode == "images_decoded":  # input.image_bytes=decoded: the pixels
        want, tag = [], 0
        for label, (cls, n) in enumerate(sorted(CLASSES.items())):
            for k in range(n):
                if not (cls == "bee" and k == 1):
                    want.append((label, [3 + k, 4, 3], tag))
                tag += 1
            if cls == "cat":
                want.append((label, [48, 64, 3], 0))  # photo.jpg's first value (PIL: 0)
        got = [(r["label"]["int64"][0], r["shape"]["int64"], b(r, "image_raw")[0])
               for r in (recs[i] for i in range(len(recs)))]
    elif mode == "images":  # the default, input.image_bytes=encoded: the files' bytes
        want = []
        for label, (cls, n) in enumerate(sorted(CLASSES.items())):
            names = ["img%d.png" % k for k in range(n) if not (cls == "bee" and k == 1)]
            for name in names + (["photo.jpg"] if cls == "cat" else []):
                body = open(os.path.join(d, cls, name), "rb").read()
                h, w = (48, 64) if name == "photo.jpg" else (3 + int(name[3]), 4)
                fmt = "jpeg" if name.endswith(".jpg") else "png"
                want.append((label, body, fmt, h, w, 3, cls + "/" + name))
        got = [(r["label"]["int64"][0], b(r, "image/encoded"), b(r, "image/format").decode(),
                r["image/height"]["int64"][0], r["image/width"]["int64"][0],
                r["image/channels"]["int64"][0], b(r, "image/filename").decode())
               for r in (recs[i] for i in range(len(recs)))]
        meta = json.load(open(os.path.join(os.path.dirname(cat), "np1", "img.meta.json")))
        if meta.get("data_features") != "image/encoded:image:uint8:*x*x3, label:int64:int64:scalar":
            sys.exit("meta.json data_features: %r" % meta.get("data_features"))
    else:
        want = fixed_files()[1]
        got = [b(recs[i], "record") for i in range(len(recs))]
    if mode.startswith("images"):
        labels = open(os.path.join(os.path.dirname(cat), "np1", "img.labels.csv")).read()
        if labels != "0,ant\n1,bee\n2,cat\n":
            sys.exit("label map: %r" % labels)
    if sorted(recs) != list(range(len(recs))):
        sys.exit("ids are not 0..N-1")
    if got != want:
        bad = next(i for i in range(min(len(got), len(want)) + 1) if i >= min(len(got), len(want)) or got[i] != want[i])
        sys.exit("%s: %d records, want %d; first difference at id %d" % (mode, len(got), len(want), bad))
    print("%s: %d records as expected" % (mode, len(got)))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
