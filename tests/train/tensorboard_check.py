"""tensorboard_check.py RUN_DIR HISTOGRAM_EVERY: TensorBoard's own readers (the `tensorboard`
package) load RUN_DIR/tb and must agree with RUN_DIR/metrics.jsonl.

  - the raw events (event_file_loader, every file of tb/train and tb/validation): no tag is
    logged twice at one step (a resumed run must not repeat the steps it redid);
  - the accumulator (event_accumulator, what the dashboard serves): the scalar tags; at every
    metrics.jsonl training line the same step and values (loss, accuracy, learning_rate,
    samples_per_s, time/*_fraction); the step/* scalars at every step from 1 to the last, once
    each, step/learning_rate equal to metrics.jsonl's lr at its lines and the step/*_fraction
    in [0, 1]; epoch_loss/epoch_accuracy in validation at every
    evaluation line; histograms of weights and gradients every HISTOGRAM_EVERY steps.
Prints one line per check and exits 1 on the first difference."""
import collections
import glob
import json
import math
import os
import sys

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing import event_file_loader as efl

run, every = sys.argv[1], int(sys.argv[2])


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)


lines = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
train_lines = [l for l in lines if "loss" in l]
eval_lines = [l for l in lines if "eval_loss" in l]
last_step = max(l["step"] for l in lines)

# Raw events: each (tag, step) once.
for sub in ("train", "validation"):
    files = sorted(glob.glob(os.path.join(run, "tb", sub, "events.out.tfevents.*")))
    if not files:
        fail("no event files in tb/" + sub)
    seen = collections.Counter()
    for f in files:
        for event in efl.EventFileLoader(f).Load():
            for value in event.summary.value:
                seen[(value.tag, event.step)] += 1
    twice = sorted(k for k, n in seen.items() if n > 1)
    if twice:
        fail("tb/%s logs %d (tag, step) pairs more than once, e.g. %s" % (sub, len(twice), twice[:3]))
    print("ok   tb/%s: %d files, %d (tag, step) pairs, none twice" % (sub, len(files), len(seen)))


def load(sub):
    acc = ea.EventAccumulator(os.path.join(run, "tb", sub),
                              size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0})
    acc.Reload()
    return acc


train, validation = load("train"), load("validation")
tags = set(train.Tags()["scalars"])
want = {"loss", "accuracy", "learning_rate", "samples_per_s", "time/input_wait_fraction",
        "time/compute_fraction", "time/comm_fraction", "epoch_loss", "epoch_accuracy"}
if not want <= tags:
    fail("tb/train lacks scalar tags %s (has %s)" % (sorted(want - tags), sorted(tags)))
keys = {"loss": "loss", "accuracy": "accuracy", "lr": "learning_rate",
        "samples_per_s": "samples_per_s", "input_wait_fraction": "time/input_wait_fraction",
        "compute_fraction": "time/compute_fraction", "comm_fraction": "time/comm_fraction"}
for key, tag in keys.items():
    got = {e.step: e.value for e in train.Scalars(tag)}
    want_steps = [l["step"] for l in train_lines]
    if sorted(got) != want_steps:
        fail("%s: TensorBoard steps %s, metrics.jsonl steps %s" % (tag, sorted(got), want_steps))
    for l in train_lines:
        if not close(got[l["step"]], l[key]):
            fail("%s at step %d: TensorBoard %r, metrics.jsonl %r" % (tag, l["step"], got[l["step"]], l[key]))
print("ok   tb/train: %d scalar tags, %d steps equal to metrics.jsonl" % (len(tags), len(train_lines)))

step_tags = ["step/loss", "step/learning_rate", "step/samples_per_s", "step/input_wait_fraction",
             "step/compute_fraction", "step/comm_fraction"]
if not set(step_tags) <= tags:
    fail("tb/train lacks per-step tags %s" % sorted(set(step_tags) - tags))
for tag in step_tags:
    steps = [e.step for e in train.Scalars(tag)]
    if sorted(steps) != list(range(1, last_step + 1)):
        fail("%s: steps %s..%s (%d), want every step 1..%d once" % (tag, min(steps), max(steps), len(steps), last_step))
lr = {e.step: e.value for e in train.Scalars("step/learning_rate")}
for l in train_lines:
    if not close(lr[l["step"]], l["lr"]):
        fail("step/learning_rate at step %d: %r, metrics.jsonl lr %r" % (l["step"], lr[l["step"]], l["lr"]))
for tag in step_tags[3:]:
    bad = [(e.step, e.value) for e in train.Scalars(tag) if not 0 <= e.value <= 1]
    if bad:
        fail("%s outside [0, 1]: %s" % (tag, bad[:3]))
print("ok   tb/train: %d per-step tags at every step 1..%d" % (len(step_tags), last_step))

got = {e.step: e.value for e in validation.Scalars("epoch_loss")}
acc = {e.step: e.value for e in validation.Scalars("epoch_accuracy")}
if sorted(got) != [l["step"] for l in eval_lines] or not eval_lines:
    fail("validation epoch_loss steps %s, metrics.jsonl eval steps %s" % (sorted(got), [l["step"] for l in eval_lines]))
for l in eval_lines:
    if not close(got[l["step"]], l["eval_loss"]) or not close(acc[l["step"]], l["eval_accuracy"]):
        fail("validation at step %d differs from metrics.jsonl" % l["step"])
print("ok   tb/validation: epoch_loss, epoch_accuracy at %d evaluations" % len(eval_lines))

hist = train.Tags()["histograms"]
weights = [t for t in hist if t.startswith("weights/")]
grads = [t for t in hist if t.startswith("gradients/")]
if not weights or len(weights) != len(grads):
    fail("histograms: %d weights, %d gradients tags" % (len(weights), len(grads)))
want_steps = list(range(every, last_step, every))
for tag in hist:
    events = train.Histograms(tag)
    if [e.step for e in events] != want_steps:
        fail("histogram %s at steps %s, want %s" % (tag, [e.step for e in events], want_steps))
    for e in events:
        h = e.histogram_value
        if h.num <= 0 or sum(h.bucket) != h.num or not h.min <= h.max:
            fail("histogram %s at step %d is inconsistent: %s" % (tag, e.step, h))
print("ok   histograms: %d tags (weights and gradients) at steps %s" % (len(hist), want_steps))
