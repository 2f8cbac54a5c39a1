#!/usr/bin/python3
"""Runs every example of `shardflow-convert --help` (issue 28, item 7), in order, in one folder,
as a reader would: the lines after "Examples", each starting with two spaces, a line indented
further continuing the one before. "mpirun" becomes the test's MPI launcher and
"shardflow-convert" the built program; the inputs the examples name but do not make (logs/*.jsonl,
photos/, f.h5) are made small here, and scripts/ links to the checkout's. Each example must exit 0
and leave its output. Prints "help_examples.py: ok, N examples" last.
    help_examples.py SOURCE_DIR BIN_DIR WORK_DIR -- MPIEXEC ARGS...
"""
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys


def fail(msg):
    print("help_examples.py: FAIL: " + msg)
    sys.exit(1)


def examples(help_text):
    """The commands of the Examples section, continuation lines joined."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line.startswith("Examples"):
            inside = True
            continue
        if not inside:
            continue
        if not line.strip() or not line.startswith("  "):
            break
        if line.startswith("   ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
    return out


def make_inputs(work, src):
    (work / "scripts").symlink_to(src / "scripts")
    (work / "logs").mkdir()
    for f in range(2):
        with open(work / "logs" / f"part-{f}.jsonl", "w") as out:
            for i in range(5):
                out.write(json.dumps({"key": 10 * f + i, "text": f"line {i}",
                                      "emb": [i, 0.5, -1.0, f]}) + "\n")
    images = src / "tests" / "fixtures" / "images"
    for cls, names in (("cats", ["photo.jpg", "palette.png"]), ("dogs", ["rgba.png", "photo.png"])):
        (work / "photos" / cls).mkdir(parents=True)
        for name in names:
            shutil.copy(images / name, work / "photos" / cls / name)
    shutil.copy(src / "tests" / "fixtures" / "hdf5" / "fmnist-test-1000.h5", work / "f.h5")


def output_of(words):
    for w in words:
        if w.startswith("--output.path="):
            return w.split("=", 1)[1]
        if w == "--out":
            return words[words.index(w) + 1]
    return None


def main(argv):
    src, bin_dir, work = (pathlib.Path(a).resolve() for a in argv[1:4])
    mpi = argv[5:] if len(argv) > 4 and argv[4] == "--" else []
    help_text = subprocess.run([str(bin_dir / "shardflow-convert"), "--help"], check=True,
                               capture_output=True, text=True, timeout=30).stdout
    cmds = examples(help_text)
    if len(cmds) < 5:
        fail(f"found {len(cmds)} examples in --help, expected at least 5")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    make_inputs(work, src)
    for cmd in cmds:
        words = shlex.split(cmd)
        if words[0] == "mpirun":
            words = mpi + words[1:]
        words = [str(bin_dir / w) if w == "shardflow-convert" else w for w in words]
        print("$ " + cmd, flush=True)
        run = subprocess.run(" ".join(shlex.quote(w) for w in words), shell=True, cwd=work,
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            fail(f"exit {run.returncode}: {cmd}")
        out = output_of(shlex.split(cmd))
        if out is None or not any(work.glob(out + "*")):
            fail(f"no output {out} from: {cmd}")
    print(f"help_examples.py: ok, {len(cmds)} examples")


if __name__ == "__main__":
    main(sys.argv)
