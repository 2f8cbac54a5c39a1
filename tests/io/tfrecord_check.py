#!/usr/bin/env python3
"""Reads TFRecord files with the independent PyPI `tfrecord` package (pure Python) and prints
   records=N int64_sum=S float_sum=F bytes_len=L bytes_sum=B
over all int64, float and bytes features, for comparison with what shardflow wrote.
usage: tfrecord_check.py FILE [none|gzip|zlib]"""
import sys

from tfrecord.reader import tfrecord_loader


def main():
    path = sys.argv[1]
    compression = sys.argv[2] if len(sys.argv) > 2 else "none"
    records = int_sum = bytes_len = bytes_sum = 0
    float_sum = 0.0
    if compression == "zlib":
        # The package knows gzip only; inflate the ZLIB stream ourselves and hand it a file.
        import tempfile, zlib
        with open(path, "rb") as f:
            data = zlib.decompress(f.read())
        tmp = tempfile.NamedTemporaryFile(suffix=".tfrecord", delete=False)
        tmp.write(data)
        tmp.close()
        path, compression = tmp.name, None
    elif compression == "none":
        compression = None
    description = {"id": "int", "vals": "int", "x": "float", "blob": "byte"}
    for example in tfrecord_loader(path, None, description, compression_type=compression):
        records += 1
        int_sum += int(sum(int(v) for v in example["id"])) + int(sum(int(v) for v in example["vals"]))
        float_sum += float(sum(float(v) for v in example["x"]))
        blob = bytes(example["blob"])
        bytes_len += len(blob)
        bytes_sum += sum(blob)
    print("records=%d int64_sum=%d float_sum=%.6f bytes_len=%d bytes_sum=%d"
          % (records, int_sum, float_sum, bytes_len, bytes_sum))


if __name__ == "__main__":
    main()
