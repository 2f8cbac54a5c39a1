// shardflow-sim: shardflow's all-reduce algorithms and the data-parallel gradient all-reduce
// schedule on a cluster simulated by SimGrid SMPI (issue 26; docs/simulation.md).
//
//   smpirun -np 64 -platform sim/platforms/ib_fattree.xml -hostfile H
//       --cfg=smpi/simulate-computation:no build/sim/shardflow-sim allreduce
//       --algorithms ring,rd,hierarchical,mpi,auto --min-bytes 1K --max-bytes 64M [--check]
//   smpirun ... build/sim/shardflow-sim step --buckets 2097152,1048576 --compute-s 0.01 ...
//
// Errors follow shardflow's policy (core/mpi_env.hpp: RunMain): one line, the job ends.
#include <smpi/smpi.h>
#include <smpi/smpi_helpers_internal.h>
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "sim/driver/sim_driver.hpp"

namespace shardflow::sim {

double SimClock() { return MPI_Wtime(); }

void SimCompute(double seconds) {
  if (seconds > 0) smpi_execute(seconds);
}

double MaxOverRanks(comm::Communicator& comm, double x) {
  return comm::AllreduceDouble(comm, x, comm::ReduceOp::kMax);
}

double AlignedStart(comm::Communicator& comm) {
  // The ranks leave any collective at different simulated times (a few microseconds apart at
  // 16 ranks, tens at 1024); SMPI's clock is one clock for all ranks, so each rank sleeps until
  // the same instant, kStartMargin after the last one arrived: far more than the max takes.
  constexpr double kStartMargin = 0.01;
  const double at = MaxOverRanks(comm, SimClock()) + kStartMargin;
  const double wait = at - SimClock();
  if (wait <= 0) {
    throw Error(ErrorCode::kInternal,
                "aligned start missed: this rank left the clock max " +
                    std::to_string(-wait + kStartMargin) + " s after the last rank entered it",
                {.rank = comm.rank()});
  }
  const auto whole = static_cast<time_t>(wait);
  timespec span{.tv_sec = whole, .tv_nsec = static_cast<long>((wait - whole) * 1e9)};
  smpi_nanosleep(&span, nullptr);
  return at;
}

size_t ParseBytes(const std::string& text, const std::string& flag) {
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used > 0 ? text.substr(used) : std::string("?");
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0) {
    throw Error(ErrorCode::kInvalidArgument, "bad byte count '" + text + "'",
                {.key = flag, .hint = "a whole number with an optional K, M or G"});
  }
  return static_cast<size_t>(value) << shift;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

comm::AllreduceAlgorithm ParseSimAlgorithm(const std::string& name) {
  const comm::AllreduceAlgorithm algorithm = comm::ParseAlgorithm(name);
  if (algorithm == comm::AllreduceAlgorithm::kShm) {
    throw Error(ErrorCode::kInvalidArgument,
                "the shared-memory all-reduce cannot run under SMPI (its shared windows do not "
                "share memory between simulated ranks)",
                {.key = "--algorithms", .hint = "use auto, ring, rd, hierarchical or mpi"});
  }
  return algorithm;
}

bool FlagReader::Next() {
  if (next_ >= args_.size()) return false;
  flag_ = args_[next_++];
  return true;
}

std::string FlagReader::Value() {
  if (next_ >= args_.size()) {
    throw Error(ErrorCode::kInvalidArgument, "flag " + flag_ + " needs a value", {.key = flag_});
  }
  return args_[next_++];
}

void FlagReader::Unknown(const std::string& usage) const {
  throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + flag_ + "'", {.hint = usage});
}

}  // namespace shardflow::sim

int main(int argc, char** argv) {
  using namespace shardflow;
  std::string command;
  std::vector<std::string> args;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment&) {
        if (argc < 2 || (std::string(argv[1]) != "allreduce" && std::string(argv[1]) != "step")) {
          throw Error(ErrorCode::kInvalidArgument, "shardflow-sim needs a command",
                      {.hint = "shardflow-sim allreduce|step [flags] (docs/simulation.md)"});
        }
        command = argv[1];
        args.assign(argv + 2, argv + argc);
      },
      [&](MpiEnvironment&) {
        // No watchdog: its thread would run outside SMPI's simulated scheduler.
        comm::Communicator comm(comm::Group::kWorld, {.watchdog = std::nullopt});
        // SMPI's shared windows do not share memory between simulated ranks (kShm summed to
        // zeros here), so auto never picks shared memory and an explicit shm is refused.
        comm.set_shm_unavailable();
        return command == "allreduce" ? sim::RunAllreduce(comm, args) : sim::RunStep(comm, args);
      });
}
