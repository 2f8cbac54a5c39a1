#!/usr/bin/env python3
"""tf.data's side of bench/csv.sh: one pass over a CSV file with tf.data.experimental.CsvDataset,
as shardflow-bench csv does with the streaming CSV source, and the same conversion as
shardflow-convert --input.format=table (CsvDataset -> tf.train.Example -> TFRecordWriter).

  tf_csv.py --file F --columns SPEC [--mode source|batch|convert] [--batch B] [--na NA]
            [--out PATH]
SPEC is shardflow's: name:int64|float32|float64|string[=default],... (the file's header names the
columns; those listed are selected). Prints "csv MODE: N rows in T s = R rows/s (checksum S)";
the checksum is the sum of every numeric value read (shardflow-bench csv prints the same).
Threads: tf.data's private pool of --threads (default 1) and one intra-op thread, so the
comparison runs on the same cores as the shardflow side (bench/csv.sh pins both with taskset).
"""
import argparse
import time

import numpy as np
import tensorflow as tf

TYPES = {"int64": tf.int64, "float32": tf.float32, "float64": tf.float64, "string": tf.string}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--file", required=True)
    p.add_argument("--columns", required=True)
    p.add_argument("--mode", default="source", choices=["source", "batch", "convert"])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--na", default="")
    p.add_argument("--out", default="/tmp/tf_csv_convert.tfrecord")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    with open(a.file) as f:
        header = f.readline().rstrip("\r\n").split(",")
    names, defaults, cols = [], [], []
    for entry in a.columns.split(","):
        name, _, rest = entry.partition(":")
        kind, has_default, default = rest.partition("=")
        dtype = TYPES[kind]
        names.append(name)
        cols.append(header.index(name))
        if has_default:
            defaults.append(tf.constant(dtype.as_numpy_dtype(default) if kind != "string" else default, dtype))
        else:
            defaults.append(dtype)  # required
    order = sorted(range(len(cols)), key=lambda i: cols[i])  # CsvDataset wants ascending columns
    ds = tf.data.experimental.CsvDataset(a.file, [defaults[i] for i in order], header=True,
                                         na_value=a.na, select_cols=[cols[i] for i in order])
    options = tf.data.Options()
    options.threading.private_threadpool_size = a.threads
    options.threading.max_intra_op_parallelism = 1
    ds = ds.with_options(options)
    rows, total = 0, 0.0
    start = time.perf_counter()
    if a.mode == "source":
        # Row by row inside tf.data (a Python loop over rows would time the interpreter).
        def add(state, row):
            s = state[1]
            for v in row:
                if v.dtype != tf.string:
                    s += tf.cast(v, tf.float64)
            return state[0] + 1, s

        count, s = ds.reduce((tf.constant(0, tf.int64), tf.constant(0.0, tf.float64)), add)
        rows, total = int(count), float(s)
    elif a.mode == "batch":
        for batch in ds.batch(a.batch):
            rows += int(batch[0].shape[0])
            for v in batch:
                if v.dtype != tf.string:
                    total += float(np.sum(v.numpy().astype(np.float64)))
    else:
        named = [names[i] for i in order]

        def example(*values):
            feature = {}
            for n, v in zip(named, values):
                if v.dtype == tf.string:
                    feature[n] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.numpy()]))
                elif v.dtype == tf.int64:
                    feature[n] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v)]))
                else:
                    feature[n] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(v)]))
            return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

        with tf.io.TFRecordWriter(a.out) as w:
            for row in ds:
                w.write(example(*row))
                rows += 1
                for v in row:
                    if v.dtype != tf.string:
                        total += float(v)
    seconds = time.perf_counter() - start
    print("csv %s: %d rows in %.3f s = %.0f rows/s (checksum %.6e)" % (a.mode, rows, seconds,
                                                                       rows / seconds, total))


if __name__ == "__main__":
    main()
