#!/usr/bin/env bash
# keep_work.sh COMMAND...: runs COMMAND (an mpirun line) so that Ctrl-C, or SIGTERM to this
# script, stops shardflow-train cleanly with a checkpoint instead of losing the run.
#
#   scripts/keep_work.sh mpirun -np 4 build/bin/shardflow-train --config X --output runs/x
#
# Why: a terminal's Ctrl-C reaches mpirun, which answers it by sending the ranks SIGTERM after
# OpenMPI's odls_base_sigkill_timeout (1 s) and SIGKILL as long again later: too little time to
# write a large checkpoint, and the run is lost. SIGUSR1, which mpirun forwards to every rank at
# once, makes the ranks stop after the current step, write a checkpoint and exit 75
# (core/stop_signal.hpp); `--resume` continues the run. So COMMAND runs in its own session,
# where the terminal's Ctrl-C does not reach it, and this script turns Ctrl-C and SIGTERM into
# SIGUSR1 for it. A second Ctrl-C (or SIGTERM) is passed on as SIGTERM: mpirun then ends the job
# as it would have.
#
# Exit status: COMMAND's (75 for a run stopped with a checkpoint).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND... (e.g. mpirun -np 2 build/bin/shardflow-train ...)" >&2; exit 2; }

setsid "$@" &
child=$!
asked=0
stop() {
  if [ $asked -eq 0 ]; then
    echo "keep_work.sh: stopping after the current step with a checkpoint (Ctrl-C again: stop now)" >&2
    kill -USR1 "$child" 2>/dev/null
  else
    kill -TERM "$child" 2>/dev/null
  fi
  asked=$((asked + 1))
}
trap stop INT TERM
# `wait` returns early (status > 128) whenever a trapped signal arrives: wait until the child
# has really ended, then once more for its status (bash keeps it).
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"
