#!/usr/bin/env python3
"""tf.data peer of `shardflow-bench image` (issue 49): the ImageNet training input pipeline as
TensorFlow's own ResNet recipes write it, on the same TFRecord shards (image/encoded, label).

  run_tf_peer.sh --script tf_image_pipeline.py --shards 'DIR/img-*.tfrecord' --threads 1
      [--epochs 2] [--size 224] [--batch 64]

Per element: parse the Example, tf.image.extract_jpeg_shape, sample_distorted_bounding_box
(area 0.08-1, aspect 3/4-4/3, 10 attempts, the whole image when none fits: the
RandomResizedCrop window), tf.image.decode_and_crop_jpeg (only the window's MCUs are decoded),
resize to SIZE x SIZE bilinear, random_flip_left_right, normalize with ImageNet's means and
stds to float32; then shuffle(256), batch(64), prefetch(AUTOTUNE), map with
num_parallel_calls=AUTOTUNE. --threads bounds the pipeline's private thread pool and TF's
inter/intra-op pools (run it under taskset on that many cores, as bench/image.sh does).
Counted: images over the wall time of --epochs passes, pipeline construction included (as in
shardflow-bench image). Prints one JSON line.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def pipeline(pattern, size, batch, threads, seed):
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = tf.data.TFRecordDataset(files)
    features = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        ex = tf.io.parse_single_example(record, features)
        encoded = ex["image/encoded"]
        shape = tf.image.extract_jpeg_shape(encoded)
        begin, crop_size, _ = tf.image.sample_distorted_bounding_box(
            shape, bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4]),
            min_object_covered=0.0, aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0),
            max_attempts=10, use_image_if_no_bounding_boxes=True)
        y, x, _ = tf.unstack(begin)
        h, w, _ = tf.unstack(crop_size)
        image = tf.image.decode_and_crop_jpeg(encoded, tf.stack([y, x, h, w]), channels=3)
        image = tf.image.resize(image, [size, size], method="bilinear")
        image = tf.image.random_flip_left_right(image)
        image = (image - MEAN) / STD
        return image, ex["label"]

    ds = ds.shuffle(256, seed=seed).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.threading.max_intra_op_parallelism = 1
    return ds.with_options(options)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shards", required=True, help="glob of the TFRecord shards")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    t0 = time.perf_counter()
    images = 0
    ds = pipeline(a.shards, a.size, a.batch, a.threads, 49)  # reshuffled every pass
    for _ in range(a.epochs):
        for x, _ in ds:
            if x.shape[1:] != (a.size, a.size, 3):
                sys.exit(f"tf_image_pipeline: a batch of shape {x.shape}")
            images += int(x.shape[0])
    took = time.perf_counter() - t0
    print(json.dumps({"peer": "tf.data", "tensorflow": tf.__version__, "threads": a.threads,
                      "images": images, "seconds": took, "images_per_s": images / took}))


if __name__ == "__main__":
    main()
