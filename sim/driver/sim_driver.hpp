// shardflow-sim's commands and the few helpers they share. shardflow-sim is comm/ compiled with
// SimGrid's smpicxx (sim/smpi/CMakeLists.txt): under `smpirun -platform P.xml` every rank is a
// simulated host, every message crosses the platform's simulated links, and SimClock() reads
// the simulated time. The commands print CSV on rank 0 (docs/simulation.md has the columns).
//
// Thread-safety: SMPI runs each rank as a user-level thread of one process, and
// slurm/simulate_study.py runs it without privatization (smpi/privatization:no), so the ranks
// share the globals of comm/ and core/: none holds per-rank state the driver relies on (the
// log's rank prefix is the last rank's). Every function here is called by its rank's thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"

namespace shardflow::sim {

// Seconds of simulated time since the simulation started.
double SimClock();
// Advances this rank's simulated clock by `seconds` of computation (nothing runs for real).
void SimCompute(double seconds);

// The largest value of `x` over the ranks of `comm` (collective).
double MaxOverRanks(comm::Communicator& comm, double x);
// Collective: returns one simulated instant, the same on every rank, at which every rank
// returns, so a timed call starts on all ranks at once (no start skew in one call's time).
double AlignedStart(comm::Communicator& comm);

// "4096", "64K", "4M", "1G" (powers of 1024) -> bytes. Throws Error(kInvalidArgument) naming
// `flag` for anything else.
size_t ParseBytes(const std::string& text, const std::string& flag);
// "a,b,c" -> {"a","b","c"}.
std::vector<std::string> SplitList(const std::string& text);

// `args` are the command's flags (after the command name). Both return the exit code.
int RunAllreduce(comm::Communicator& comm, const std::vector<std::string>& args);
int RunStep(comm::Communicator& comm, const std::vector<std::string>& args);

// comm::ParseAlgorithm, refusing shm (SMPI has no working shared windows: docs/simulation.md).
comm::AllreduceAlgorithm ParseSimAlgorithm(const std::string& name);

// Walks flags `--name value`: Next() returns false at the end; Value() consumes the value and
// throws Error(kInvalidArgument) naming the flag when there is none.
class FlagReader {
 public:
  explicit FlagReader(const std::vector<std::string>& args) : args_(args) {}
  bool Next();
  const std::string& flag() const { return flag_; }
  std::string Value();
  [[noreturn]] void Unknown(const std::string& usage) const;

 private:
  const std::vector<std::string>& args_;
  size_t next_ = 0;
  std::string flag_;
};

}  // namespace shardflow::sim
