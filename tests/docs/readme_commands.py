#!/usr/bin/env python3
"""Runs every ```sh block of README.md, in order, in one shell, as a reader would (issue 24,
item 1), against data made the way ./run.sh makes it but smaller. Prints each command with its
README line, SKIPPED (with the reason) for the few that cannot run here, and
"readme_commands.py: ok" last when every other command exited 0.
    readme_commands.py SOURCE_DIR BIN_DIR WORK_DIR -- MPIEXEC ARGS...
The work folder looks like a checkout after ./run.sh: build/bin, configs/, scripts/ and slurm/
link to the real ones, data/ holds 2,000 training and 1,000 test images as TFRecord shards
named as ./run.sh names them, and runs/fmnist_mlp/ the checkpoint of a 2-step training where
./run.sh trains the MLP (the serving block serves it). The commands run without the OpenMPI
root and oversubscription settings of the environment: the README must say them itself. The
README's serving port 8501 becomes a free port of this machine (another server on 8501 would
make shardflow-serve exit 2, as it should). A README command that waits (the serving block's
wait for "listening on") must bound its wait itself: those naming a variable of the shell run
in it, without this test's 60 s limit.
"""
import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys

# Commands that cannot run inside a test, by their first word(s), with the reason printed.
SKIP = [
    (r"^\./run\.sh\b", "the main job itself (15 epochs of the full data); this test's data is made the way it makes it"),
    (r"^\./test\.sh\b", "the whole test suite, this test among them"),
    (r"^(\S+=\S+ )*sbatch\b", "needs Slurm"),
    (r"^slurm/scaling_study\.py .*--mode sbatch", "needs Slurm"),
    (r"^slurm/scaling_study\.py .*--mode mpirun", "takes minutes (4 rank counts, full data)"),
    (r"^slurm/scaling_study\.py .*--simulate", "needs a real run's summary.json and the SimGrid "
     "build (sim.scaling_study_simulate runs it)"),
    (r"^scripts/setup\.sh\b", "installs Debian packages (network)"),
    (r"^cmake\b", "the build itself, which this test runs inside"),
    (r"^ctest\b", "the test suite, this test among them"),
]


def commands(readme):
    """(line number, command) for every command of every ```sh block, continuations joined."""
    out, block, pending, start = [], False, "", 0
    for number, line in enumerate(readme.read_text().splitlines(), 1):
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block or not line.strip():
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, (pending + line).strip()))
        pending = ""
    return out


def make_data(work, bin_dir, mpi):
    (work / "data").mkdir()
    for split, limit, shards in (("train", 2000, 8), ("test", 1000, 2)):
        subprocess.run(
            mpi + ["-np", "2", str(bin_dir / "shardflow-convert"), "--input.format=idx",
                   f"--input.split={split}", f"--input.limit={limit}",
                   f"--output.path=data/fmnist-{split}", f"--output.shards={shards}",
                   "--log.level=warn"],
            cwd=work, check=True, timeout=60)
    # ./run.sh's model, trained for 2 steps: what the serving block serves.
    subprocess.run(
        mpi + ["-np", "1", str(bin_dir / "shardflow-train"), "--config", "configs/fmnist_mlp.ini",
               "--output", "runs/fmnist_mlp", "--train.max_steps=2", "--eval.files=",
               "--no-progress", "--log.level=warn"],
        cwd=work, check=True, timeout=60, stdout=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    src, bin_dir, work = (pathlib.Path(a).resolve() for a in sys.argv[1:4])
    mpi = sys.argv[5:] if sys.argv[4] == "--" else sys.argv[4:]
    subprocess.run(["rm", "-rf", str(work)], check=True)
    (work / "build").mkdir(parents=True)
    (work / "build" / "bin").symlink_to(bin_dir)
    for name in ("configs", "scripts", "slurm"):
        (work / name).symlink_to(src / name)
    make_data(work, bin_dir, mpi)

    script = ["set -euo pipefail"]
    ran = 0
    assigned = set()  # shell variables README commands set (server_pid=$!)
    port = str(free_port())
    for line, command in commands(src / "README.md"):
        command = re.sub(r"\b8501\b", port, command)
        reason = next((why for pattern, why in SKIP if re.search(pattern, command)), None)
        shown = shlex.quote(f"README.md:{line}: {command}")
        if reason:
            script.append(f"echo {shown}; echo {shlex.quote('  SKIPPED: ' + reason)}")
            continue
        ran += 1
        script.append(f"echo {shown}")
        # A job started in the background, a variable it sets and the commands using it (kill,
        # wait) run in this shell, as in the reader's: under `bash -c` the job would be nobody's
        # and outlive the test.
        assignment = re.fullmatch(r"([A-Za-z_]\w*)=\S*", command)
        if (command.endswith("&") or assignment or
                any(re.search(r"\$\{?" + name + r"\b", command) for name in assigned)):
            if assignment:
                assigned.add(assignment.group(1))
            script.append(command if command.endswith("&") else
                          f"{command} || {{ rc=$?; echo 'FAILED with status '$rc; exit 1; }}")
            continue
        script.append(f"timeout -k 5 60 bash -c {shlex.quote(command)} >cmd{line}.log 2>&1 || "
                      f"{{ rc=$?; tail -20 cmd{line}.log; echo 'FAILED with status '$rc; exit 1; }}")
    script.append(f"echo 'ran {ran} README commands'")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_rmaps_base_oversubscribe"))}
    env["OMPI_MCA_mpi_yield_when_idle"] = "1"
    # export lines run in this shell, so they hold for the commands after them: run them here,
    # not under `bash -c`.
    text = "\n".join(script)
    text = re.sub(r"timeout -k 5 60 bash -c '(export [^']*)' >cmd\d+\.log 2>&1 \|\|[^\n]*",
                  r"\1", text)
    result = subprocess.run(["bash", "-c", text], cwd=work, env=env)
    if result.returncode != 0 or ran == 0:
        print("readme_commands.py: FAILED")
        sys.exit(1)
    print("readme_commands.py: ok")


if __name__ == "__main__":
    main()
