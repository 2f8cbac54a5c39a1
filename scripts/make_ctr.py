#!/usr/bin/env python3
"""A synthetic click-through-rate table laid out like the Criteo display-ads data, with a known
labelling rule so the best reachable AUC and log loss are known.
    scripts/make_ctr.py --out DIR [--train-rows N] [--eval-rows M] [--seed S] [--cardinality K]
                [--tags-max L]
writes DIR/ctr-train.csv (N rows), DIR/ctr-eval.csv (M rows) and DIR/ctr-meta.json, and prints one
summary line. Each CSV has the header label,i1,...,i13,c1,...,c26,tags and nothing is quoted:
  label   0 or 1;
  i1..i13 non-negative integer counts (floor of a per-column log-normal), 4% of cells empty;
  c1..c26 8 lowercase hex digits: the id's rank r in 0..card_j-1 drawn from a Zipf-like power law
          (exponent 1.1, closed-form inverse CDF of a truncated Pareto, O(1) a draw), turned into
          hex by a keyed 32-bit bijection of r (so ids within a column never collide); c3, c7 and
          c19 are empty in 3% of rows; card_j = max(4, min(K, int(K ** (0.3 + 0.7 * (j-1) / 25))));
  tags    a count uniform in 0..L of decimal ids in 0..K//10 (same power law), duplicates dropped,
          joined by "|"; empty for none.
The label is Bernoulli(sigmoid(logit)); the logit (bias + numeric terms + per-id effects + a
c1 x c2 cross effect + the mean tag effect) is spelled out in rule_text() and in the meta JSON, with
the exact AUC and log loss of the true probabilities on each split. Per-id effects are
pseudo-normals of splitmix64(key(seed, column) + r), so train and eval share one rule; their rows
come from separate random.Random streams seeded from the seed (as is the pilot stream that fits
the bias). The same arguments give the same bytes.
Errors: bad arguments print the usage and one line "make_ctr.py: error: ..." and exit with status
2 (argparse); a folder or file that cannot be written prints one such line and exits with 1.
"""
import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from operator import add, mul

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
TAU = 2.0 * math.pi
CHUNK = 8192            # rows generated column by column at a time; part of the byte-exact output
PILOT_ROWS = 32768      # rows of a separate stream used to fit the bias
TARGET_CLICK_RATE = 0.25
ZIPF_EXPONENT = 1.1
NUMERIC_MISSING = 0.04
CATEGORICAL_MISSING = 0.03
MISSING_COLUMNS = (3, 7, 19)                 # 1-based c columns that are sometimes empty
# Numeric column i: x = floor(exp(N(mu_i, sigma_i))); weight w_i on standardised log1p(x).
NUMERIC_MU = (0.5, 3.0, 1.5, 1.5, 7.0, 3.5, 1.5, 2.0, 3.5, -0.5, 1.0, -1.0, 2.0)
NUMERIC_SIGMA = (1.2, 2.0, 1.5, 1.2, 2.0, 2.0, 1.8, 1.2, 1.5, 1.0, 1.0, 1.5, 1.3)
NUMERIC_WEIGHT = (0.30, -0.20, 0.10, 0.25, -0.10, 0.05, 0.20, -0.15, 0.10, 0.30, 0.0, 0.15, -0.05)
# Per-column effect strength: a few strong columns, most weak.
STRONG = {2: 0.6, 6: 0.45, 10: 0.4, 14: 0.45, 20: 0.4, 25: 0.5}
WEAK = 0.12
CROSS_STRENGTH = 0.4
TAG_STRENGTH = 0.5


def splitmix64(x):
    """The splitmix64 output function: a bijection of 64-bit integers that mixes well."""
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def derive(seed, *labels):
    """A 64-bit key for (seed, labels...), from SHA-256 (not the salted str hash)."""
    text = repr((seed,) + labels).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little")


def pseudo_normal(h):
    """A standard normal from a 64-bit hash, by Box-Muller on its two 32-bit halves."""
    u1 = ((h >> 32) + 0.5) / 4294967296.0
    u2 = (h & M32) / 4294967296.0
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


class Lazy(dict):
    """A dict that fills a missing key with fn(key) on first use."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, key):
        value = self[key] = self.fn(key)
        return value


def zipf_params(card):
    """(a, e) with q = int((1 - u * a) ** e) for u uniform in [0, 1): q = rank + 1 in 1..card and
    P(q) roughly proportional to q ** -ZIPF_EXPONENT (a truncated Pareto's inverse CDF)."""
    s = ZIPF_EXPONENT
    a = (1.0 - (card + 1.0) ** (1.0 - s)) * (1.0 - 2.0 ** -40)   # keep rank < card despite rounding
    return a, 1.0 / (1.0 - s)


def hex_namer(key):
    """q = rank + 1 -> 8 hex digits through a keyed bijection of 32-bit integers; 0 -> ''."""
    k0, m1, m2 = key & M32, ((key >> 32) | 1) & M32, (splitmix64(key) | 1) & M32

    def name(q):
        if not q:
            return ""
        x = (q - 1) ^ k0
        x ^= x >> 16
        x = (x * m1) & M32
        x ^= x >> 15
        x = (x * m2) & M32
        x ^= x >> 16
        return "%08x" % x
    return name


def effect_fn(key, strength, card):
    """q = r + 1 -> strength * (0.5 + log1p(r) / log1p(card)) * pseudo-normal(key, r); 0 -> 0.
    Rare ids (large rank r) get up to 3 times the spread of the commonest."""
    scale = 1.0 / math.log1p(card)

    def effect(q):
        if not q:
            return 0.0
        r = q - 1
        z = pseudo_normal(splitmix64((key + r) & M64))
        return strength * (0.5 + math.log1p(r) * scale) * z
    return effect


def cardinalities(k):
    """The 26 categorical cardinalities, from about K ** 0.3 (c1) up to K (c26)."""
    return [max(4, min(k, int(k ** (0.3 + 0.7 * j / 25)))) for j in range(26)]


def numeric_scales(seed):
    """(mean, sd) of log1p(x) per numeric column, from 4096 draws of a stream of their own."""
    rng = random.Random(derive(seed, "numeric-scale"))
    scales = []
    for mu, sigma in zip(NUMERIC_MU, NUMERIC_SIGMA):
        logs = [math.log1p(int(math.exp(mu + sigma * z))) for z in normals(rng, 4096)]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / len(logs)) or 1.0
        scales.append((mean, sd))
    return scales


def build_model(seed, k, tags_max):
    """Everything the rule needs: cardinalities, samplers' constants and lazy per-id tables."""
    cards = cardinalities(k)
    cats = []
    for j, card in enumerate(cards, 1):
        strength = STRONG.get(j, WEAK)
        cats.append({
            "card": card, "zipf": zipf_params(card),
            "missing": CATEGORICAL_MISSING if j in MISSING_COLUMNS else 0.0,
            "hex": Lazy(hex_namer(derive(seed, "hex", j))),
            "effect": Lazy(effect_fn(derive(seed, "effect", j), strength, card)),
        })
    numeric = [{"mu": mu, "sigma": sigma, "mean": mean, "k": w / sd}
               for mu, sigma, w, (mean, sd)
               in zip(NUMERIC_MU, NUMERIC_SIGMA, NUMERIC_WEIGHT, numeric_scales(seed))]
    cross_key = derive(seed, "cross")
    tags_card = k // 10 + 1
    return {
        "cards": cards, "cats": cats, "numeric": numeric, "tags_max": tags_max,
        "tags_card": tags_card, "tags_zipf": zipf_params(tags_card),
        "tags_effect": Lazy(effect_fn(derive(seed, "tags"), TAG_STRENGTH, tags_card)),
        "tags_str": Lazy(lambda q: str(q - 1)),
        "cross": Lazy(lambda pair: CROSS_STRENGTH * pseudo_normal(
            splitmix64((cross_key + pair) & M64))),
        "bias": 0.0,
    }


def normals(rng, count):
    """count standard normals by Box-Muller over whole lists (faster than rng.gauss per value)."""
    rnd, log, sqrt = rng.random, math.log, math.sqrt
    half = (count + 1) // 2
    radii = [sqrt(-2.0 * log(1.0 - rnd())) for _ in range(half)]
    angles = [TAU * rnd() for _ in range(half)]
    values = list(map(mul, radii, map(math.cos, angles)))
    values += map(mul, radii, map(math.sin, angles))
    return values[:count]


def numeric_columns(model, rng, n, logit):
    """(13 count columns as strings, logit plus their weighted standardised log1p terms)."""
    rnd, exp, log1p = rng.random, math.exp, math.log1p
    zs = normals(rng, n * len(model["numeric"]))
    columns = []
    for c, col in enumerate(model["numeric"]):
        mu, sigma, mean, k = col["mu"], col["sigma"], col["mean"], col["k"]
        xs = [-1 if rnd() < NUMERIC_MISSING else int(exp(mu + sigma * z))
              for z in zs[c * n:(c + 1) * n]]
        columns.append(["" if x < 0 else str(x) for x in xs])
        if k:
            logit = list(map(add, logit, [0.0 if x < 0 else (log1p(x) - mean) * k for x in xs]))
    return columns, logit


def categorical_columns(model, rng, n, logit):
    """(26 hex columns, logit plus the per-id effects and the c1 x c2 cross effect). Ranks are
    kept 1-based here (0 = missing) to save a subtraction a draw."""
    rnd = rng.random
    columns, ranks = [], []
    for cat in model["cats"]:
        a, e = cat["zipf"]
        miss = cat["missing"]
        if miss:
            rs = [0 if rnd() < miss else int((1.0 - rnd() * a) ** e) for _ in range(n)]
        else:
            rs = [int((1.0 - rnd() * a) ** e) for _ in range(n)]
        columns.append(list(map(cat["hex"].__getitem__, rs)))
        logit = list(map(add, logit, map(cat["effect"].__getitem__, rs)))
        ranks.append(rs)
    span, cross = model["cards"][1] + 1, model["cross"]
    logit = list(map(add, logit, [cross[r1 * span + r2] for r1, r2 in zip(ranks[0], ranks[1])]))
    return columns, logit


def tags_column(model, rng, n, logit):
    """(the tags column, logit plus the mean effect of each row's distinct tags)."""
    rnd = rng.random
    a, e = model["tags_zipf"]
    count_span = model["tags_max"] + 1
    counts = [int(rnd() * count_span) for _ in range(n)]
    ids = [int((1.0 - rnd() * a) ** e) for _ in range(sum(counts))]   # 1-based
    effects, names = model["tags_effect"].__getitem__, model["tags_str"].__getitem__
    texts, terms, start = [], [], 0
    for count in counts:
        if not count:
            texts.append("")
            terms.append(0.0)
            continue
        row = ids[start:start + count]
        start += count
        if count > 1:
            row = list(dict.fromkeys(row))
        texts.append("|".join(map(names, row)))
        terms.append(sum(map(effects, row)) / len(row))
    return texts, list(map(add, logit, terms))


def generate_chunk(model, rng, n):
    """n rows as (39 + 1 string columns without the label, logits including the bias)."""
    logit = [model["bias"]] * n
    numeric, logit = numeric_columns(model, rng, n, logit)
    categorical, logit = categorical_columns(model, rng, n, logit)
    tags, logit = tags_column(model, rng, n, logit)
    return numeric + categorical + [tags], logit


def fit_bias(model, seed):
    """Sets model["bias"] so the mean click probability over a pilot stream is TARGET_CLICK_RATE."""
    rng = random.Random(derive(seed, "rows", "pilot"))
    model["bias"] = 0.0
    logits = []
    for start in range(0, PILOT_ROWS, CHUNK):
        logits += generate_chunk(model, rng, min(CHUNK, PILOT_ROWS - start))[1]
    low, high = -30.0, 30.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        rate = sum([1.0 / (1.0 + math.exp(-(mid + v))) for v in logits]) / len(logits)
        low, high = (mid, high) if rate < TARGET_CLICK_RATE else (low, mid)
    model["bias"] = 0.5 * (low + high)


HEADER = ",".join(["label"] + ["i%d" % i for i in range(1, 14)]
                  + ["c%d" % i for i in range(1, 27)] + ["tags"])


def write_split(path, model, rng, rows):
    """Writes rows rows to path; returns (true probabilities, labels)."""
    probs, labels = [], []
    rnd, exp = rng.random, math.exp
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.write(HEADER + "\n")
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            columns, logit = generate_chunk(model, rng, n)
            ps = [1.0 / (1.0 + exp(-v)) for v in logit]
            ys = [1 if rnd() < p else 0 for p in ps]
            columns.insert(0, ["1" if y else "0" for y in ys])
            out.write("\n".join(map(",".join, zip(*columns))))
            out.write("\n")
            probs += ps
            labels += ys
    return probs, labels


def auc(probs, labels):
    """Mann-Whitney AUC of probs against labels, ties counted 1/2; None without both classes."""
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return None
    order = sorted(range(len(probs)), key=probs.__getitem__)
    below, total, i = 0, 0.0, 0
    while i < len(order):
        j, pos, neg, p = i, 0, 0, probs[order[i]]
        while j < len(order) and probs[order[j]] == p:
            if labels[order[j]]:
                pos += 1
            else:
                neg += 1
            j += 1
        total += pos * (below + 0.5 * neg)
        below += neg
        i = j
    return total / (positives * negatives)


def log_loss(probs, labels):
    """Mean negative log likelihood of labels under probs, in nats; None for no rows."""
    if not probs:
        return None
    tiny = 1e-300
    total = sum(math.log(max(p if y else 1.0 - p, tiny)) for p, y in zip(probs, labels))
    return -total / len(probs)


def rule_text(model):
    """One paragraph stating the labelling rule with this run's constants."""
    strong = ", ".join("c%d %.2g" % (j, s) for j, s in sorted(STRONG.items()))
    weights = ", ".join("i%d %.2g" % (i, w) for i, w in enumerate(NUMERIC_WEIGHT, 1))
    return (
        "label ~ Bernoulli(p), p = sigmoid(logit), logit = bias (%.6f, fitted so the mean p over "
        "a pilot stream is %.2f) + sum over numeric columns of w_i * (log1p(x_i) - mean_i) / sd_i "
        "(mean_i, sd_i of log1p(x_i) estimated from 4096 draws; weights %s; missing adds 0) + sum "
        "over categorical columns of effect_j(r) = s_j * (0.5 + log1p(r) / log1p(card_j)) * "
        "N_j(r), where r is the id's popularity rank, N_j(r) a pseudo-normal of "
        "splitmix64(key(seed, j) + r) and s_j %.2g except %s (missing adds 0) + a cross effect "
        "%.2g * N_cross((r_c1 + 1) * (card_c2 + 1) + r_c2 + 1) of the (c1, c2) rank pair + the "
        "mean over the row's distinct tags t of %.2g * (0.5 + log1p(t) / "
        "log1p(tags_cardinality)) * N_tags(t) (0 for no tags). "
        "x_i = floor(exp(Normal(mu_i, sigma_i))); ranks and tags follow a truncated power law "
        "with exponent %.2g; train and eval rows come from separate seeded streams."
        % (model["bias"], TARGET_CLICK_RATE, weights, WEAK, strong, CROSS_STRENGTH,
           TAG_STRENGTH, ZIPF_EXPONENT))


def count_arg(low, high=None):
    """An argparse type: an integer in low..high (high None: no upper bound)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not an integer" % text)
        if value < low or (high is not None and value > high):
            limit = "%d..%d" % (low, high) if high is not None else ">= %d" % low
            raise argparse.ArgumentTypeError("%d is out of range (%s)" % (value, limit))
        return value
    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="make_ctr.py",
        description="Write a deterministic Criteo-like CTR table with a known labelling rule: "
                    "DIR/ctr-train.csv, DIR/ctr-eval.csv and DIR/ctr-meta.json.")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    parser.add_argument("--train-rows", type=count_arg(0), default=100000, metavar="N",
                        help="rows of ctr-train.csv (default 100000)")
    parser.add_argument("--eval-rows", type=count_arg(0), default=20000, metavar="M",
                        help="rows of ctr-eval.csv (default 20000)")
    parser.add_argument("--seed", type=count_arg(0, M64), default=1, metavar="S",
                        help="fixes the rule and the rows (default 1)")
    parser.add_argument("--cardinality", type=count_arg(10, M32), default=100000, metavar="K",
                        help="distinct ids of the largest categorical column (default 100000)")
    parser.add_argument("--tags-max", type=count_arg(0, 1000), default=8, metavar="L",
                        help="most tags a row has (default 8)")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    started = time.time()
    results = {}
    try:
        os.makedirs(args.out, exist_ok=True)
        model = build_model(args.seed, args.cardinality, args.tags_max)
        fit_bias(model, args.seed)
        for split, rows in (("train", args.train_rows), ("eval", args.eval_rows)):
            rng = random.Random(derive(args.seed, "rows", split))
            path = os.path.join(args.out, "ctr-%s.csv" % split)
            results[split] = write_split(path, model, rng, rows)
        meta = {
            "seed": args.seed, "train_rows": args.train_rows, "eval_rows": args.eval_rows,
            "cardinality": args.cardinality, "tags_max": args.tags_max,
            "cardinalities": model["cards"], "tags_cardinality": model["tags_card"],
            "click_rate": {s: (sum(y) / len(y) if y else None) for s, (_, y) in results.items()},
            "best_auc": {s: auc(p, y) for s, (p, y) in results.items()},
            "best_log_loss": {s: log_loss(p, y) for s, (p, y) in results.items()},
            "rule": rule_text(model),
        }
        with open(os.path.join(args.out, "ctr-meta.json"), "w", encoding="ascii") as out:
            json.dump(meta, out, indent=1)
            out.write("\n")
    except OSError as error:
        sys.exit("make_ctr.py: error: %s" % error)
    rate = meta["click_rate"]
    best = meta["best_auc"]["eval"]
    print("make_ctr.py: wrote %d train + %d eval rows to %s; click rate train %s eval %s; "
          "best eval AUC %s; %.1f s"
          % (args.train_rows, args.eval_rows, args.out,
             "-" if rate["train"] is None else "%.4f" % rate["train"],
             "-" if rate["eval"] is None else "%.4f" % rate["eval"],
             "-" if best is None else "%.4f" % best, time.time() - started))


if __name__ == "__main__":
    main(sys.argv[1:])
