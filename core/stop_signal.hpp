// A graceful stop asked for by a signal: preemption and time limits on a batch system.
//
// InstallStopHandlers() makes SIGTERM, SIGUSR1 and SIGINT (Ctrl-C) set a flag instead of ending
// the process (Slurm
// sends SIGTERM on scancel and preemption, then SIGKILL after KillWait; `--signal=B:USR1@120`
// sends USR1 ahead of the time limit; mpirun forwards USR1 to every rank but answers SIGTERM by
// killing the ranks after odls_base_sigkill_timeout, 1 s by default). The program polls
// StopSignal() at safe points (shardflow-train: after each step), agrees with the other ranks,
// writes a checkpoint and exits with kExitPreempted. Further signals while it does so are only
// counted, so a second SIGTERM cannot cut a checkpoint short (SIGKILL still can; the checkpoint's
// atomic rename then leaves the previous one in place). The exception is a second SIGINT: a
// second Ctrl-C means "now", so it ends the process at once with kExitInterrupted and a line on
// stderr (the previous checkpoint stays; the one being written is a temporary file).
// Under mpirun a terminal's Ctrl-C reaches mpirun only (each rank has its own process group):
// OpenMPI then sends the ranks SIGTERM after odls_base_sigkill_timeout and SIGKILL as long again
// later, which can be too short for a checkpoint; scripts/keep_work.sh turns Ctrl-C into the
// SIGUSR1 mpirun forwards at once.
// Thread-safety: the flag is a lock-free atomic; handlers may run on any thread.
#pragma once

namespace shardflow {

// The exit status of a run stopped by a signal after its checkpoint was written (EX_TEMPFAIL:
// "try again": the sbatch templates requeue the job on it).
constexpr int kExitPreempted = 75;
// The exit status of a run stopped by Ctrl-C (SIGINT), after its checkpoint, or at once on a
// second Ctrl-C: 128 + SIGINT, as a shell reports a program Ctrl-C ended.
constexpr int kExitInterrupted = 130;

// Idempotent. Installs the handlers for SIGTERM, SIGUSR1 and SIGINT.
void InstallStopHandlers();
// The first stop signal received (SIGTERM, SIGUSR1 or SIGINT), or 0.
int StopSignal();
// The exit status for a run stopped by `signal` after its checkpoint: kExitInterrupted for
// SIGINT, else kExitPreempted.
int StopExitStatus(int signal);
// How many stop signals arrived.
int StopSignalCount();
// "SIGTERM", "SIGUSR1", "SIGINT", or "signal N".
const char* StopSignalName(int signal);

}  // namespace shardflow
