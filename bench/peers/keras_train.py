"""Keras peer of shardflow-train for issue 25: the configs/ MLP, CNN and ResNet on Fashion-MNIST.

The same models as bench/peers/torch_train.py and configs/fmnist_mlp.ini / fmnist_cnn.ini /
fmnist_resnet.ini
(same layers, channels-last like shardflow, He normal init, zero biases), SGD with momentum 0.9,
the presets' learning rate with warm-up and cosine decay, the CNN's weight decay (Keras's SGD
applies it decoupled), global batch 128, on the Debian package's data decoded into memory first
(not timed), with --threads intra-op threads (and 1 inter-op thread). Keras's own loop:
model.fit over the arrays with shuffling; each epoch's wall time counts everything fit does in
it, the first epoch included (it traces, and compiles when Keras decides to). Prints one JSON
line like torch_train.py's. Run by bench/peers/run_keras_peer.sh (tensorflow-cpu in a venv).
"""
import json
import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

from fmnist_peer import SETTINGS, load, parse_args  # noqa: E402


def residual(x, f, stride=1):
    """shardflow's residual:F[:s] (core/layers/residual.hpp), "same" padding like shardflow's."""
    L = keras.layers
    y = L.Conv2D(f, 3, stride, padding="same", kernel_initializer="he_normal")(x)
    y = L.ReLU()(L.BatchNormalization()(y))
    y = L.BatchNormalization()(L.Conv2D(f, 3, padding="same", kernel_initializer="he_normal")(y))
    if stride != 1 or x.shape[-1] != f:
        x = L.Conv2D(f, 1, stride, padding="same", kernel_initializer="he_normal")(x)
    return L.ReLU()(L.Add()([y, x]))


def resnet():
    """core/model.cpp's preset: 77,898 parameters (Keras's batch norm defaults are shardflow's)."""
    L = keras.layers
    x = inputs = keras.Input((28, 28, 1))
    x = L.Conv2D(16, 3, padding="same", kernel_initializer="he_normal")(x)
    x = L.ReLU()(L.BatchNormalization()(x))
    x = residual(residual(residual(x, 16), 32, 2), 64, 2)
    x = L.Dense(10, kernel_initializer="he_normal")(L.GlobalAveragePooling2D()(x))
    return keras.Model(inputs, x)


def model_for(name):
    he = "he_normal"
    L = keras.layers
    if name == "resnet":
        return resnet()
    if name == "mlp":
        layers = [L.Flatten(), L.Dense(512, kernel_initializer=he), L.ReLU(),
                  L.Dense(256, kernel_initializer=he), L.ReLU(), L.Dense(10, kernel_initializer=he)]
    else:
        layers = [L.Conv2D(32, 5, padding="same", kernel_initializer=he), L.ReLU(),
                  L.MaxPooling2D(2), L.Conv2D(64, 5, padding="same", kernel_initializer=he),
                  L.ReLU(), L.MaxPooling2D(2), L.Flatten(), L.Dense(1024, kernel_initializer=he),
                  L.ReLU(), L.Dropout(0.3), L.Dense(10, kernel_initializer=he)]
    return keras.Sequential([keras.Input((28, 28, 1))] + layers)


class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, lr, min_lr, warmup, total):
        self.lr, self.min_lr, self.warmup, self.total = lr, min_lr, warmup, total

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warm = self.lr * (step + 1) / self.warmup
        t = tf.minimum((step - self.warmup) / max(1, self.total - self.warmup), 1.0)
        cos = self.min_lr + (self.lr - self.min_lr) * 0.5 * (1 + tf.cos(math.pi * t))
        return tf.where(step < self.warmup, warm, cos)


class EpochTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.t0 = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.t0)


def main():
    a = parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(a.seed)
    x, y = load("train")
    tx, ty = load("test")
    s = SETTINGS[a.model]
    steps_per_epoch = math.ceil(len(x) / a.batch)
    schedule = WarmupCosine(s["lr"], s["min_lr"], a.warmup_steps, steps_per_epoch * a.epochs)
    opt = keras.optimizers.SGD(learning_rate=schedule, momentum=0.9,
                               weight_decay=s["weight_decay"] or None)
    m = model_for(a.model)
    m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    timer = EpochTimer()
    hist = m.fit(x, y, batch_size=a.batch, epochs=a.epochs, shuffle=True, verbose=0,
                 callbacks=[timer])
    _, acc = m.evaluate(tx, ty, batch_size=1000, verbose=0)
    samples = len(x) * a.epochs
    print(json.dumps({"peer": "keras", "version": f"keras {keras.__version__}, tf {tf.__version__}",
                      "model": a.model, "threads": a.threads, "epochs": a.epochs,
                      "batch": a.batch, "jit_compile": bool(m.jit_compile),
                      "epoch_seconds": [round(e, 3) for e in timer.seconds],
                      "samples_per_s": round(samples / sum(timer.seconds), 1),
                      "loss": round(float(hist.history["loss"][-1]), 4),
                      "test_accuracy": float(acc)}))


if __name__ == "__main__":
    main()
