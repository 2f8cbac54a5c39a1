#!/usr/bin/env python3
"""TensorFlow tf.data peer for `shardflow-bench pipeline --peer`.

Reads the same TFRecord files as shardflow with tf.data's best-practice pipeline and prints one
JSON line: {"peer": "tf.data", "mode": ..., "records": N, "seconds": S, "records_per_s": R}.

  raw:  TFRecordDataset(files, num_parallel_reads=AUTOTUNE) -> shuffle -> batch(B)
        -> map(parse_example on the batch, AUTOTUNE) -> map(decode_raw + cast/scale) -> prefetch
  jpeg: TFRecordDataset(files, num_parallel_reads=AUTOTUNE) -> shuffle
        -> map(parse_single_example + decode_jpeg + cast/scale, AUTOTUNE) -> batch(B) -> prefetch

Features: image_raw (bytes: 784 raw uint8 pixels, or a JPEG), label (int64).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def build(files, mode, batch, shuffle, threads):
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    auto = tf.data.AUTOTUNE
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=auto)
    if shuffle > 0:
        ds = ds.shuffle(shuffle, seed=1)
    spec = {"image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    if mode == "raw":
        ds = ds.batch(batch)
        ds = ds.map(lambda s: tf.io.parse_example(s, spec), num_parallel_calls=auto)
        ds = ds.map(lambda f: (tf.cast(tf.reshape(tf.io.decode_raw(f["image_raw"], tf.uint8),
                                                  [-1, 28, 28, 1]), tf.float32) / 255.0,
                               f["label"]), num_parallel_calls=auto)
    else:
        def decode(s):
            f = tf.io.parse_single_example(s, spec)
            img = tf.io.decode_jpeg(f["image_raw"], channels=1)
            return tf.cast(img, tf.float32) / 255.0, f["label"]
        ds = ds.map(decode, num_parallel_calls=auto).batch(batch)
    return ds.prefetch(auto).with_options(opts)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--mode", choices=["raw", "jpeg"], default="raw")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--shuffle", type=int, default=10000)
    p.add_argument("--epochs", type=int, default=2, help="first epoch warms up; the rest are timed")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    ds = build(a.files, a.mode, a.batch, a.shuffle, a.threads)
    best = None
    for epoch in range(a.epochs):
        records, label_sum = 0, 0
        start = time.perf_counter()
        for images, labels in ds:
            records += int(labels.shape[0])
            label_sum += int(tf.reduce_sum(labels))
        seconds = time.perf_counter() - start
        if epoch > 0 or a.epochs == 1:
            rate = records / seconds
            if best is None or rate > best[2]:
                best = (records, seconds, rate, label_sum)
    records, seconds, rate, label_sum = best
    print(json.dumps({"peer": "tf.data", "tensorflow": tf.__version__, "mode": a.mode,
                      "records": records, "label_sum": label_sum, "seconds": round(seconds, 4),
                      "records_per_s": round(rate, 1)}))


if __name__ == "__main__":
    sys.exit(main())
