#!/usr/bin/env python3
"""Writes a synthetic table for the tabular example (configs/tabular.ini): numeric and categorical
columns and an integer label from a known rule, so accuracy has a known ceiling.

Columns:  id (int64), x1, x2, x3 (float, standard normal, x3 sometimes missing: written as NA),
          income (float, log-normal, large scale: normalisation matters), city (string, 6 values,
          one with a comma so it is quoted), zone (int64, 0..7), label (int64, 0/1).
Rule:     score = 1.5*x1 - x2 + 0.8*x3' + CITY[city] + ZONE[zone] + 0.4*log(income) - 4.0,
          x3' = x3 or 0 when missing; label = 1 when score > 0, then each label is flipped with
          probability NOISE (default 0.05). The best possible accuracy is 1 - NOISE; a model that
          learns the rule exactly scores it on the flipped data (within sampling error).
The same --seed gives the same bytes. Usage:
  python3 scripts/make_table.py --rows 2000000 --out data/table-train.csv --seed 1
  python3 scripts/make_table.py --rows 50000 --out data/table-test.csv --seed 2
"""
import argparse
import math
import random

CITIES = ["lyon", "paris", "new york, ny", "osaka", "lima", "oslo"]
CITY = {"lyon": -1.0, "paris": 0.5, "new york, ny": 1.5, "osaka": -0.5, "lima": 0.0, "oslo": 2.0}
ZONE = [0.0, -1.5, 1.0, 0.5, -0.5, 1.5, -1.0, 0.0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--noise", type=float, default=0.05, help="label flip probability")
    p.add_argument("--missing", type=float, default=0.02, help="share of x3 written as NA")
    a = p.parse_args()
    rng = random.Random(a.seed)
    with open(a.out, "w", newline="") as out:
        out.write("id,x1,x2,x3,income,city,zone,label\n")
        lines = []
        for i in range(a.rows):
            x1, x2, x3 = rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)
            income = math.exp(rng.gauss(10.0, 0.5))
            city = CITIES[rng.randrange(len(CITIES))]
            zone = rng.randrange(len(ZONE))
            missing = rng.random() < a.missing
            score = 1.5 * x1 - x2 + (0.0 if missing else 0.8 * x3) + CITY[city] + ZONE[zone] \
                + 0.4 * math.log(income) - 4.0
            label = 1 if score > 0 else 0
            if rng.random() < a.noise:
                label = 1 - label
            city_text = '"%s"' % city if "," in city else city
            x3_text = "NA" if missing else "%.6f" % x3
            lines.append("%d,%.6f,%.6f,%s,%.2f,%s,%d,%d\n" % (i, x1, x2, x3_text, income, city_text,
                                                              zone, label))
            if len(lines) >= 65536:
                out.write("".join(lines))
                lines = []
        out.write("".join(lines))


if __name__ == "__main__":
    main()
