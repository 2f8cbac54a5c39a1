"""same_predictions.py CPU_CSV DEVICE_CSV: two shardflow-predict CSVs of the 1000 fixture records
give every record the same id and class, and probabilities within 1e-5 (float rounding)."""
import csv
import sys

cpu, dev = (list(csv.reader(open(p))) for p in sys.argv[1:3])
assert cpu[0] == dev[0] and len(cpu) == len(dev) == 1001, (len(cpu), len(dev))
worst = 0.0
for a, b in zip(cpu[1:], dev[1:]):
    assert a[:2] == b[:2], (a[:2], b[:2])
    worst = max(worst, max(abs(float(x) - float(y)) for x, y in zip(a[2:], b[2:])))
print(f"predictions: 1000 records, the same classes, probabilities within {worst:.2e}")
assert worst < 1e-5
