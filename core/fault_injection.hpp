// Test-only fault injection at named points of production code: the one seam through which the
// process-level tests (tests/train/preemption_runs.sh ckpt_kill, tests/train/disk_faults.sh
// enospc_injected) and bench/fault_soak.sh make a process die or fail where a crash or a full
// disk would. Not for production runs.
//
// A test arms faults with SHARDFLOW_TEST_* environment variables (read through
// core/environment.hpp, as every SHARDFLOW_* variable), and this file is the only reader of
// SHARDFLOW_TEST_CHECKPOINT_FAULT (apps/train/test_fault.hpp reads SHARDFLOW_TEST_FAULT): they are
// parsed once per process, the first time a point is reached (or CheckEnvironment is called), and a
// malformed value is Error(kInvalidArgument) naming the variable and the values it takes, thrown
// there. Unset or empty: nothing is armed, and reaching a point costs a call and a test of an empty
// list.
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
//
// Points (where production code calls At; its spelling in a variable's value; who reaches it):
//   kCheckpointWrite      "write"      io/checkpoint/checkpoint.cpp, every saving rank: the
//                                      temporary file written, still open (Site::file is it)
//   kCheckpointFsync      "fsync"      every saving rank: the file closed, not yet synced
//   kCheckpointRename     "rename"     rank 0: the file synced, not yet renamed
//   kCheckpointPublished  "published"  rank 0: renamed, the directory not yet synced
//   kCheckpointPrune      "prune"      every saving rank: before older checkpoints are removed
// At every checkpoint point Site::index is the process's checkpoint number (1-based) and
// Site::rank the rank among the saving ranks.
//
// Adding a point: an enumerator, its row in fault_injection.cpp's table and a line above, and
// one `fault::At(fault::Point::kX, {...})` where production code reaches it. Adding a variable:
// its parser (and, for a new kind of fault, an Action) in fault_injection.cpp and its lines
// above. Production code never reads a SHARDFLOW_TEST_* variable itself.
// Thread-safety: the environment is parsed under a function-local static; every function may be
// called from any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace shardflow::fault {

enum class Point {
  kCheckpointWrite,
  kCheckpointFsync,
  kCheckpointRename,
  kCheckpointPublished,
  kCheckpointPrune,
};

// The point's spelling in a variable's value ("write", "fsync", ...).
const char* PointName(Point point);

// Where a point is reached: what an armed fault is matched against, and what it reports.
struct Site {
  int rank = 0;             // this process's rank among the ranks that reach the point
  int64_t index = 0;        // which occurrence (a point's line above says what it counts)
  std::string_view file{};  // the file at stake, named by an injected I/O failure
};

// One armed fault: at `point`, on `rank`, at occurrence `index`, `action`.
struct Fault {
  enum class Action {
    kKill,         // a line on stderr naming the variable, point and index; then SIGKILL
    kFailNoSpace,  // throws the Error(kIo) a full disk gives at the point, naming Site::file
  };
  const char* variable = "";  // the SHARDFLOW_TEST_* variable that armed it
  Point point = Point::kCheckpointWrite;
  Action action = Action::kKill;
  int rank = 0;
  int64_t index = 0;
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

// Does what the environment arms at `point` for `site`: nothing (the production case), or
// raises SIGKILL (kKill), or throws Error(kIo) (kFailNoSpace). Throws as Parse does.
void At(Point point, const Site& site);

// At() against `faults` instead of the environment's (the seam's own tests).
void At(const std::vector<Fault>& faults, Point point, const Site& site);

}  // namespace shardflow::fault
