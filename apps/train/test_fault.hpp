// Test-only fault injection for the process-level tests (tests/train/train_runs.sh).
//
// SHARDFLOW_TEST_FAULT=kill:R:S (or hang:R:S) makes rank R raise SIGKILL (or SIGSTOP) at the
// start of step S (0-based); slow:R:MS makes rank R sleep MS milliseconds at the start of every
// step (a straggler, for benchmarks); slow_input:R:MS makes rank R sleep MS milliseconds
// before taking each batch from its input pipeline, counted as input wait (a throttled input,
// for the straggler attribution tests); stall:R:S makes rank R sleep 1.5 s before taking the
// batch of step S (the stall inspector's test); slow_checkpoint:R:MS makes rank R sleep MS
// milliseconds before each checkpoint it writes (a slow file system); term:R:S and usr1:R:S make
// rank R (or every rank, R = all) send itself SIGTERM (twice: the second must not disturb the
// first's checkpoint) or SIGUSR1 at the start of step S, as a scheduler's preemption or time limit
// would (core/stop_signal.hpp); kill_allreduce:R:S makes rank R raise SIGKILL inside the
// gradient all-reduce of step S (data-parallel: its first bucket handed to the reducer thread,
// which has started it, and 50 ms given for the peers to be inside it too). Unset or empty: no
// fault. A malformed value is an error.
// Thread-safety: none needed (read once, then const).
#pragma once

#include <cstdint>

namespace shardflow::train {

class TestFault {
 public:
  // Reads SHARDFLOW_TEST_FAULT; throws Error(kInvalidArgument) for a malformed value.
  static TestFault FromEnvironment();
  // Raises the signal when this is the rank and step named (logs it first).
  void MaybeRaise(int rank, int64_t step) const;
  // slow_checkpoint: sleeps when this is the rank named (logs it first).
  void MaybeSlowCheckpoint(int rank) const;
  // slow_input: sleeps when this is the rank named (once per batch, silently); stall: sleeps
  // 1.5 s when this is the rank and step named.
  void MaybeSlowInput(int rank, int64_t step) const;
  // kill_allreduce: raises SIGKILL (after logging and 50 ms) when this is the rank and step.
  void MaybeKillInAllreduce(int rank, int64_t step) const;

 private:
  static constexpr int kEveryRank = -2;
  int rank_ = -1;
  int64_t step_ = -1;
  int signal_ = 0;
  int64_t slow_ms_ = 0;
  int64_t slow_checkpoint_ms_ = 0;
  int64_t slow_input_ms_ = 0;
  bool stall_ = false;
  bool in_allreduce_ = false;  // kill_allreduce: signal_ is raised there, not at the step start
};

}  // namespace shardflow::train
