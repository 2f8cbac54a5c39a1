#!/usr/bin/env python3
"""Counts the records every rank trained on (SHARDFLOW_TEST_ROW_IDS logs: "EPOCH STEP id,id,..."
per batch) over the runs of one training job, stopped and resumed on other rank counts.

  check_row_ids.py RECORDS EPOCHS STEPS LEFT_OUT PREFIX...

Every epoch 0..EPOCHS-1 must see each record at most once and RECORDS - LEFT_OUT records (LEFT_OUT:
what the elastic resume said it left out, in its epoch; 0 elsewhere); the steps must be 0..STEPS-1.
LEFT_OUT = -1: only "at most once" is checked (runs whose equal step counts leave batches out)."""
import collections
import glob
import sys


def main():
    records, epochs, steps, left_out = (int(v) for v in sys.argv[1:5])
    seen = collections.defaultdict(collections.Counter)  # epoch -> id -> times
    steps_seen = set()
    for prefix in sys.argv[5:]:
        files = glob.glob(prefix + ".rank*")
        if not files and left_out < 0:
            continue  # a run that trained nothing (it found the run complete)
        if not files:
            sys.exit(f"no row-id logs at {prefix}.rank*")
        for name in files:
            for line in open(name):
                epoch, step, ids = line.split()
                steps_seen.add(int(step))
                for i in ids.split(","):
                    seen[int(epoch)][int(i)] += 1
    problems = []
    if sorted(seen) != list(range(epochs)):
        problems.append(f"epochs {sorted(seen)}, wanted 0..{epochs - 1}")
    if left_out < 0:
        twice = sum(1 for ids in seen.values() for n in ids.values() if n > 1)
        if twice or sorted(seen) != list(range(epochs)):
            sys.exit(f"{twice} records trained twice in an epoch; epochs {sorted(seen)}")
        print(f"{epochs} epochs: each record at most once")
        return
    if steps_seen != set(range(steps)):
        problems.append(f"steps {min(steps_seen)}..{max(steps_seen)} ({len(steps_seen)} distinct),"
                        f" wanted 0..{steps - 1}")
    lost = 0
    for epoch, ids in sorted(seen.items()):
        twice = [i for i, n in ids.items() if n > 1]
        if twice:
            problems.append(f"epoch {epoch}: {len(twice)} records trained twice (e.g. {twice[0]})")
        if len(ids) != records:
            lost += records - len(ids)
            if records - len(ids) not in (0, left_out):
                problems.append(f"epoch {epoch}: {len(ids)} distinct records, wanted {records}"
                                f" (or {records - left_out} in the elastic epoch)")
    if lost != left_out:
        problems.append(f"{lost} records missing over all epochs, the resume said {left_out}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{epochs} epochs x {records} records: each at most once; {left_out} left out as said")


if __name__ == "__main__":
    main()
