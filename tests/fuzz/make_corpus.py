#!/usr/bin/env python3
"""Writes the in-tree seed corpus tests/fuzz/corpus/<target>/ (see corpus/README.md).

Usage: tests/fuzz/make_corpus.py  (from anywhere; overwrites the seeds it writes). The seeds of
fuzz_checkpoint_info are written by the target itself (SHARDFLOW_FUZZ_WRITE_SEEDS, see
fuzz_checkpoint_info.cpp), not here. Deterministic: gzip headers carry mtime 0.
"""
import gzip
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "tfrecord")
CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def gz(data):
    return gzip.compress(data, mtime=0)


def records(path, n):
    """The first n framed records of a TFRecord file, and their Example payloads."""
    data, pos, framed, payloads = open(path, "rb").read(), 0, b"", []
    while pos + 12 <= len(data) and len(payloads) < n:
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        framed += data[pos:pos + 16 + length]
        payloads.append(data[pos + 12:pos + 12 + length])
        pos += 16 + length
    return framed, payloads


def tfrecord_seeds():
    tf, tf_ex = records(os.path.join(FIXTURES, "tf-written.tfrecord"), 1)
    mixed, mixed_ex = records(os.path.join(FIXTURES, "mixed-features.tfrecord"), 7)
    fm, fm_ex = records(os.path.join(FIXTURES, "fmnist-test-00000-of-00002.tfrecord"), 2)
    # fuzz_tfrecord_reader: first byte = mode (bits 0-1 plain/gzip/zlib, bit 2 skip, bit 3 small
    # buffer, bit 4 + bits 5-7 byte range start).
    put("fuzz_tfrecord_reader", "tf-written-plain", b"\x00" + tf)
    put("fuzz_tfrecord_reader", "mixed-plain", b"\x00" + mixed)
    put("fuzz_tfrecord_reader", "mixed-skip-smallbuf-range", b"\x7c" + mixed)
    put("fuzz_tfrecord_reader", "fmnist2-plain", b"\x00" + fm)
    put("fuzz_tfrecord_reader", "fmnist2-gzip", b"\x01" + gz(fm))
    put("fuzz_tfrecord_reader", "fmnist2-zlib-skip", b"\x06" + zlib.compress(fm))
    for i, ex in enumerate(tf_ex + mixed_ex + fm_ex[:1]):
        put("fuzz_example_parser", "example%d" % i, ex)


def jsonl_seeds():
    good = ('{"id": 1, "score": 0.5, "text": "abc", "emb": [1, 2.5, -3e2], "ids": [4, 5]}\n'
            '{"ids": [-9223372036854775808, 0], "emb": [0, 0, 0], "text": "\\u00e9\\n\\"q\\"",'
            ' "score": 1, "id": 9223372036854775807, "extra": {"a": [null, true]}}\n')
    bad = ('{"id": 1.5, "score": 0, "text": "", "emb": [1, 2, 3], "ids": [1, 2]}\n'
           '[1, 2]\n{"id": 2, "score": 0, "text": 7, "emb": [1, 2], "ids": [1, 2]}\n'
           '   \n{"id": 3, "score": "x"\n')
    # First byte = mode: bit 0 skip bad lines, bit 1 gzip, bit 2 header line, bit 3 exact line
    # numbers, bit 4 + bits 5-7 a two-range read split at (mode >> 5) / 8 of the file.
    put("fuzz_json_lines", "good", b"\x00" + good.encode())
    put("fuzz_json_lines", "good-crlf-header", b"\x04" + ("id,score\r\n" + good.replace("\n", "\r\n")).encode())
    put("fuzz_json_lines", "mixed-skip-ranges", b"\x91" + (good + bad + good.rstrip("\n")).encode())
    put("fuzz_json_lines", "good-exact-ranges", b"\x78" + (good + "\n\t\n" + good).encode())
    put("fuzz_json_lines", "good-gzip", b"\x02" + gz(good.encode()))
    put("fuzz_json_lines", "bad-fail", b"\x00" + bad.encode())


def csv_seeds():
    # First byte = mode: bits 0-1 delimiter , ; TAB |, bit 2 typed columns a,b,c,d.
    put("fuzz_csv", "typed", b"\x04" + b'a,b,c,d\n1,2.5,hello,3.25\n-7, +1e3 ,"q,""x""",\n,nan,,inf\n')
    put("fuzz_csv", "bom-crlf-float64", b"\x00" + "\ufeffx,y\r\n1,2\r\n\r\n3,-inf\r\n".encode())
    put("fuzz_csv", "semicolon-quoted-newline", b"\x05" + b'd;c;b;a;e\n1.5;"multi\nline";inf;42;z\n')
    put("fuzz_csv", "tab-typed", b"\x06" + b"c\ta\td\tb\n\"\"\t0\t\t1\n")
    put("fuzz_csv", "pipe-open-quote", b"\x03" + b'k|v\n1|"open\n')
    put("fuzz_csv", "ragged", b"\x00" + b"a,b\n1\n2,3,4\n1.5x,2\n")


def csv_stream_seeds():
    # Mode byte: bits 0-1 delimiter (, ; tab |), bit 2 '#' comments, bit 3 quoted_newlines off,
    # bit 4 gzip, bits 5-7 where the file is cut in two byte ranges (eighths).
    put("fuzz_csv_stream", "quoted-newlines-cut-half", bytes([4 << 5]) +
        b'c,b,a\n"x\ny",1.5,2\n# note "\n\n"q,""r""",2,\nplain,-3e2,7\r\n')
    put("fuzz_csv_stream", "comments-cut-quarter", bytes([4 | (2 << 5)]) +
        b'#head\na,b,c\n1,2,"a,b"\n#x\n3,4,c\n')
    put("fuzz_csv_stream", "no-newlines-semicolon", bytes([1 | 8 | (5 << 5)]) +
        b"a;b;c\n1;2;x\n3;4;y\n5;6;z\n")
    put("fuzz_csv_stream", "gzip", bytes([16]) + gz(b"a,b,c\n1,2,x\n"))
    put("fuzz_csv_stream", "bad-number", bytes([3 << 5]) + b"a,b,c\n1,2x,y\n")


def idx(code, fmt, shape, values):
    head = struct.pack(">BBBB", 0, 0, code, len(shape)) + b"".join(struct.pack(">I", d) for d in shape)
    return head + b"".join(struct.pack(">" + fmt, v) for v in values)


def idx_seeds():
    put("fuzz_idx", "uint8-2x3x3", idx(0x08, "B", [2, 3, 3], range(18)))
    put("fuzz_idx", "int8-4", idx(0x09, "b", [4], [-128, -1, 0, 127]))
    put("fuzz_idx", "int16-2x2", idx(0x0B, "h", [2, 2], [-32768, -1, 1, 32767]))
    put("fuzz_idx", "int32-3", idx(0x0C, "i", [3], [-2**31, 0, 2**31 - 1]))
    put("fuzz_idx", "float32-2x2", idx(0x0D, "f", [2, 2], [0.5, -1.0, float("inf"), float("nan")]))
    put("fuzz_idx", "float64-2", idx(0x0E, "d", [2], [1e300, -0.0]))
    put("fuzz_idx", "uint8-labels-5", idx(0x08, "B", [5], [9, 0, 0, 3, 1]))
    put("fuzz_idx", "uint8-1x4x4-gzip", gz(idx(0x08, "B", [1, 4, 4], range(16))))
    put("fuzz_idx", "uint8-empty-0x3", idx(0x08, "B", [0, 3], []))


def jpeg_window_seeds():
    # tests/fixtures/images/photo.jpg (2 KB) after mode bytes: channels, DCT scale, window
    # top/left/height/width fractions, output size (fuzz_jpeg_window.cpp).
    photo = open(os.path.join(HERE, "..", "fixtures", "images", "photo.jpg"), "rb").read()
    put("fuzz_jpeg_window", "photo-whole-c0-s1", bytes([0, 0, 0, 0, 255, 255, 7]) + photo)
    put("fuzz_jpeg_window", "photo-corner-c1-s2", bytes([1, 1, 200, 180, 40, 60, 3]) + photo)
    put("fuzz_jpeg_window", "photo-middle-c3-s8", bytes([2, 3, 90, 70, 120, 130, 1]) + photo)
    put("fuzz_jpeg_window", "photo-cut-c3-s1", bytes([2, 0, 10, 20, 250, 250, 5]) + photo[:1200])


def config_seeds():
    full = ("# every key\n[train]\nbatch = 64\nsteps = 0\nlr = 1e-3\nmomentum = 0.5\n"
            "optimizer = ADAM\n\n[data]\nshuffle = false\nname = exp 1\ndims = 8, 4,2\n"
            "files = a.csv, b.csv\n")
    put("fuzz_config", "full", full)
    put("fuzz_config", "full-overrides", full + "\0train.batch=128\ndata.files=x\ntrain.lr=0.25")
    put("fuzz_config", "defaults-overrides", "\0data.shuffle=yes\ndata.dims=1")
    put("fuzz_config", "duplicate-key", "[train]\nbatch = 1\nbatch = 2\n")
    put("fuzz_config", "unknown-and-outside", "lr = 1\n[train]\nbogus = 1\n[bad name]\n")
    put("fuzz_config", "bad-values", "[train]\r\nbatch = -1\r\nmomentum = 2\r\nlr = nan\r\n[data]\r\nname =\r\n")


if __name__ == "__main__":
    tfrecord_seeds()
    jsonl_seeds()
    csv_seeds()
    csv_stream_seeds()
    idx_seeds()
    config_seeds()
    jpeg_window_seeds()
