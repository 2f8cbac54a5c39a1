// A graceful stop asked for by a signal: preemption and time limits on a batch system.
//
// InstallStopHandlers() makes SIGTERM and SIGUSR1 set a flag instead of ending the process (Slurm
// sends SIGTERM on scancel and preemption, then SIGKILL after KillWait; `--signal=B:USR1@120`
// sends USR1 ahead of the time limit; mpirun forwards USR1 to every rank but answers SIGTERM by
// killing the ranks after odls_base_sigkill_timeout, 1 s by default). The program polls
// StopSignal() at safe points (shardflow-train: after each step), agrees with the other ranks,
// writes a checkpoint and exits with kExitPreempted. Further signals while it does so are only
// counted, so a second SIGTERM cannot cut a checkpoint short (SIGKILL still can; the checkpoint's
// atomic rename then leaves the previous one in place).
// Thread-safety: the flag is a lock-free atomic; handlers may run on any thread.
#pragma once

namespace shardflow {

// The exit status of a run stopped by a signal after its checkpoint was written (EX_TEMPFAIL:
// "try again": the sbatch templates requeue the job on it).
constexpr int kExitPreempted = 75;

// Idempotent. Installs the handlers for SIGTERM and SIGUSR1.
void InstallStopHandlers();
// The first stop signal received (SIGTERM or SIGUSR1), or 0.
int StopSignal();
// How many stop signals arrived.
int StopSignalCount();
// "SIGTERM", "SIGUSR1", or "signal N".
const char* StopSignalName(int signal);

}  // namespace shardflow
