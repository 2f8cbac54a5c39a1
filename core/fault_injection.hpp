// Test-only fault injection at named points of production code: the one seam through which the
// process-level tests (tests/train/*.sh, tests/slurm/requeue_test.sh) and bench/fault_soak.sh make
// a process die, stop, receive a scheduler's signal, run slowly or fail where a crash, a hang, a
// preemption, a straggler or a full disk would, and through which they observe which records each
// step trained. Not for production runs.
//
// A test arms faults with SHARDFLOW_TEST_* environment variables (read through
// core/environment.hpp, as every SHARDFLOW_* variable), and this file is their only reader: they
// are parsed once per process, the first time a point is reached (or CheckEnvironment is called),
// and a malformed value is Error(kInvalidArgument) naming the variable and the values it takes,
// thrown there. Unset or empty: nothing is armed, and reaching a point costs a call and a test of
// an empty list.
//
// Variables:
//   SHARDFLOW_TEST_CHECKPOINT_FAULT=PHASE:N  rank 0 of the saving ranks writes the line
//       "SHARDFLOW_TEST_CHECKPOINT_FAULT: SIGKILL at 'PHASE' of checkpoint N" to stderr and
//       raises SIGKILL at PHASE (a checkpoint point's spelling, below) of this process's N-th
//       checkpoint (N >= 1). Whatever the phase, a resume must find an intact checkpoint: the
//       previous one, or this one once renamed.
//   SHARDFLOW_TEST_CHECKPOINT_FAULT=enospc:N  rank 0's write of the N-th checkpoint fails as a
//       full disk does: Error(kIo) "cannot write the HDF5 data: No space left on device
//       (errno 28) (injected by SHARDFLOW_TEST_CHECKPOINT_FAULT)" naming the temporary file (for
//       machines where a small tmpfs cannot be mounted).
//   SHARDFLOW_TEST_FAULT=KIND:RANK:N[,KIND:RANK:N...]  training faults on training rank RANK
//       (0-based), one or several:
//       kill:R:S, hang:R:S    SIGKILL, or SIGSTOP, at the start of step S (0-based), after the
//                             line "SHARDFLOW_TEST_FAULT: rank R raises SIGKILL at step S"
//       term:R|all:S          SIGTERM twice (the second must not disturb the first's checkpoint),
//       usr1:R|all:S          or SIGUSR1, at the start of step S, on rank R or every rank, as a
//                             scheduler's preemption or time limit would (core/stop_signal.hpp)
//       slow:R:MS             a compute straggler: MS ms more at the start of every step
//       slow_input:R:MS       a throttled input: MS ms before taking every batch (input wait)
//       stall:R:S             1.5 s before taking the batch of step S (the stall inspector's test)
//       slow_checkpoint:R:MS  a slow file system: MS ms before each checkpoint R writes, after
//                             the line "... rank R sleeps MS ms before writing a checkpoint"
//       kill_allreduce:R:S    SIGKILL inside the gradient all-reduce of step S (data-parallel:
//                             after a bucket is handed to the reducer, which has started it, and
//                             50 ms for the peers to be inside it too), after a line naming it
//   SHARDFLOW_TEST_ROW_IDS=PREFIX  every training rank appends one line per step to PREFIX.rankR:
//       "EPOCH STEP id,id,..." (the records of its batch, tests/train/check_row_ids.py).
//
// Points (where production code calls At; its spelling; who reaches it; what Site::index counts):
//   kCheckpointWrite      "write"      io/checkpoint/checkpoint.cpp, every saving rank: the
//                                      temporary file written, still open (Site::file is it)
//   kCheckpointFsync      "fsync"      every saving rank: the file closed, not yet synced
//   kCheckpointRename     "rename"     rank 0: the file synced, not yet renamed
//   kCheckpointPublished  "published"  rank 0: renamed, the directory not yet synced
//   kCheckpointPrune      "prune"      every saving rank: before older checkpoints are removed
//   kStepStart            "step"       apps/train/training_loop.cpp, every training rank: a step
//                                      about to run (index: the step)
//   kBeforeBatch          "batch"      every training rank: about to take the step's batch from
//                                      its input (index: the step)
//   kBatchTaken           "taken"      every rank that trains records: the batch taken
//                                      (index: the step; Site::line is "EPOCH STEP ids")
//   kInAllreduce          "allreduce"  apps/train/strategies/data_parallel: a gradient bucket
//                                      handed to the all-reduce (index: the step)
//   kBeforeCheckpoint     "checkpoint" every training rank: about to save (index: unused)
// At every checkpoint point Site::index is the process's checkpoint number (1-based) and
// Site::rank the rank among the saving ranks; at the training points Site::rank is the training
// rank.
//
// Adding a point: an enumerator, its row in fault_injection.cpp's table and a line above, and
// one `fault::At(fault::Point::kX, {...})` where production code reaches it. Adding a variable:
// its parser (and, for a new kind of fault, an Action) in fault_injection.cpp and its lines
// above. Production code never reads a SHARDFLOW_TEST_* variable itself.
// Thread-safety: the environment is parsed under a function-local static; every function may be
// called from any thread (kAppend's file writes are not ordered between threads: one thread per
// rank reaches kBatchTaken).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardflow::fault {

enum class Point {
  kCheckpointWrite,
  kCheckpointFsync,
  kCheckpointRename,
  kCheckpointPublished,
  kCheckpointPrune,
  kStepStart,
  kBeforeBatch,
  kBatchTaken,
  kInAllreduce,
  kBeforeCheckpoint,
};

// The point's spelling in a variable's value ("write", "fsync", ...).
const char* PointName(Point point);

// Where a point is reached: what an armed fault is matched against, and what it reports.
struct Site {
  int rank = 0;             // this process's rank among the ranks that reach the point
  int64_t index = 0;        // which occurrence (a point's line above says what it counts)
  std::string_view file{};  // the file at stake, named by an injected I/O failure
  std::string_view line{};  // what an observation point records (kAppend)
};

// One armed fault: at `point`, on `rank` (or every rank), at occurrence `index` (or every one),
// `action`.
struct Fault {
  enum class Action {
    kKill,         // a line naming the variable, point and index; `millis` ms; then SIGKILL
    kStop,         // a line; then SIGSTOP (a hung rank)
    kTerm,         // a line; then SIGTERM twice
    kUsr1,         // a line; then SIGUSR1
    kSleep,        // `millis` ms (after a line where the variable's kind announces one)
    kFailNoSpace,  // throws the Error(kIo) a full disk gives at the point, naming Site::file
    kAppend,       // appends Site::line to the file `path` + ".rank" + Site::rank
  };
  static constexpr int kEveryRank = -1;
  static constexpr int64_t kEveryIndex = -1;
  const char* variable = "";  // the SHARDFLOW_TEST_* variable that armed it
  Point point = Point::kCheckpointWrite;
  Action action = Action::kKill;
  int rank = 0;
  int64_t index = 0;
  int64_t millis = 0;     // kSleep: how long; kKill: the pause before the signal
  bool announce = true;   // kSleep: whether a line is written first
  std::string path = "";  // kAppend: the file prefix
};

// The faults `value` of `variable` arms; none for an empty value. Throws Error(kInvalidArgument)
// naming the variable, the value and the values it takes (also for a variable not listed above).
std::vector<Fault> Parse(std::string_view variable, std::string_view value);

// Parses the environment's SHARDFLOW_TEST_* variables now (once per process; later calls do
// nothing). Throws as Parse does. For a program that wants a malformed value refused at start-up
// rather than where the first point is reached.
void CheckEnvironment();

// Whether the environment arms any fault at `point`, on any rank: for a caller whose Site costs
// something to build. Throws as Parse does.
bool Armed(Point point);

// Does what the environment arms at `point` for `site`: nothing (the production case), or what
// the Action above says. Throws as Parse does.
void At(Point point, const Site& site);

// At() against `faults` instead of the environment's (the seam's own tests).
void At(const std::vector<Fault>& faults, Point point, const Site& site);

}  // namespace shardflow::fault
