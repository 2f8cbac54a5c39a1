#!/usr/bin/env python3
"""The fortunes corpus (Debian package fortunes) as JSON lines for a pipeline that tokenizes text
itself (configs/text_classifier_jsonl.ini, bench/text_pipeline.sh): one line per document,
{"text": ..., "label": K} with K the index of its file among the sorted *.u8 files, documents cut
at lines holding only "%" (blank ones skipped), every tenth held out as shardflow-convert's
--preprocess.holdout 0.1 picks them (document i when floor((i + 1) / 10) > floor(i / 10)).
    make_fortunes_jsonl.py OUT_PREFIX [FORTUNES_DIR]
writes OUT_PREFIX-train.jsonl and OUT_PREFIX-heldout.jsonl and prints the counts.
"""
import glob
import json
import os
import sys

prefix = sys.argv[1]
folder = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/games/fortunes"
files = sorted(glob.glob(os.path.join(folder, "*.u8")))
if not files:
    sys.exit(f"make_fortunes_jsonl.py: no *.u8 files in {folder} (apt-get install fortunes)")
docs = []
for label, path in enumerate(files):
    text = open(path, "rb").read().decode("utf-8", "surrogateescape").replace("\r\n", "\n")
    current = []
    for line in text.split("\n"):
        if line == "%":
            docs.append(("\n".join(current), label))
            current = []
        else:
            current.append(line)
    docs.append(("\n".join(current), label))
docs = [(d, k) for d, k in docs if d.strip()]
counts = {"train": 0, "heldout": 0}
with open(prefix + "-train.jsonl", "w") as train, open(prefix + "-heldout.jsonl", "w") as held:
    for i, (d, k) in enumerate(docs):
        part = "heldout" if (i + 1) // 10 > i // 10 else "train"
        out = held if part == "heldout" else train
        # A byte that is not UTF-8 (the *.u8 files have none) would become U+FFFD: JSON is text.
        safe = d.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        out.write(json.dumps({"text": safe, "label": k}, ensure_ascii=False) + "\n")
        counts[part] += 1
print(f"make_fortunes_jsonl.py: {len(files)} files, {counts['train']} training and "
      f"{counts['heldout']} held-out documents")
