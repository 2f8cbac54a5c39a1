// shardflow-sim allreduce: times each all-reduce algorithm of comm/ at a range of message
// sizes in simulated time, optionally checking every element of the result.
//
//   shardflow-sim allreduce [--algorithms ring,rd,hierarchical,mpi,auto] [--min-bytes 1K]
//       [--max-bytes 64M] [--step-factor 4] [--sizes 4K,1M] [--iters 3] [--segment-bytes 4M]
//       [--check]
//
// Prints on rank 0 one CSV line per (algorithm, size):
//   algorithm,ran,ranks,nodes,bytes,seconds,busbw_GBps,check
// ran: the algorithm that ran (auto resolved by comm::ChooseAlgorithm); seconds: simulated time
// of one all-reduce, the mean of --iters calls after one warm-up, the slowest rank's; busbw:
// bytes * 2 (p - 1) / p / seconds (the bus bandwidth of NCCL's tests, comparable across p).
// Without --check the buffers come from SMPI_SHARED_MALLOC (one physical copy for all ranks,
// so 4096 ranks fit in memory; their contents are meaningless); with --check every rank has
// its own buffer, rank r's element i starts as (7 r + i) % 13, and every element of every
// rank's result must equal the exact sum (small integers: float adds are exact), else the
// command fails naming the rank, element and values.
#include <smpi/smpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/driver/sim_driver.hpp"

namespace shardflow::sim {
namespace {

struct AllreduceArgs {
  std::vector<std::string> algorithms = {"ring", "rd", "hierarchical", "mpi", "auto"};
  std::vector<size_t> sizes;
  size_t min_bytes = 1024;
  size_t max_bytes = size_t{64} << 20;
  size_t step_factor = 4;
  int iters = 3;
  size_t segment_bytes = 0;
  bool check = false;
};

constexpr const char* kUsage =
    "shardflow-sim allreduce [--algorithms LIST] [--min-bytes B] [--max-bytes B] "
    "[--step-factor F] [--sizes LIST] [--iters N] [--segment-bytes B] [--check]";

AllreduceArgs ParseAllreduceArgs(const std::vector<std::string>& args) {
  AllreduceArgs a;
  FlagReader flags(args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--algorithms") {
      a.algorithms = SplitList(flags.Value());
    } else if (f == "--min-bytes") {
      a.min_bytes = ParseBytes(flags.Value(), f);
    } else if (f == "--max-bytes") {
      a.max_bytes = ParseBytes(flags.Value(), f);
    } else if (f == "--step-factor") {
      a.step_factor = ParseBytes(flags.Value(), f);
    } else if (f == "--sizes") {
      for (const std::string& s : SplitList(flags.Value())) a.sizes.push_back(ParseBytes(s, f));
    } else if (f == "--iters") {
      a.iters = static_cast<int>(ParseBytes(flags.Value(), f));
    } else if (f == "--segment-bytes") {
      a.segment_bytes = ParseBytes(flags.Value(), f);
    } else if (f == "--check") {
      a.check = true;
    } else {
      flags.Unknown(kUsage);
    }
  }
  if (a.sizes.empty()) {
    if (a.step_factor < 2 || a.min_bytes < sizeof(float) || a.min_bytes > a.max_bytes) {
      throw Error(ErrorCode::kInvalidArgument, "bad size range",
                  {.hint = "need 4 <= --min-bytes <= --max-bytes and --step-factor >= 2"});
    }
    for (size_t b = a.min_bytes; b <= a.max_bytes; b *= a.step_factor) a.sizes.push_back(b);
  }
  if (a.iters < 1) throw Error(ErrorCode::kInvalidArgument, "--iters must be >= 1");
  for (const std::string& name : a.algorithms) ParseSimAlgorithm(name);  // fails early
  return a;
}

void FillCheckPattern(float* data, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((7 * rank + i) % 13);
}

// Every element must be the exact sum over ranks of the fill pattern, which repeats every 13
// elements.
void VerifySum(const comm::Communicator& comm, const float* data, size_t count) {
  long long want[13] = {};
  for (int r = 0; r < comm.size(); ++r) {
    for (size_t i = 0; i < 13; ++i) want[i] += static_cast<long long>((7 * r + i) % 13);
  }
  for (size_t i = 0; i < count; ++i) {
    if (data[i] != static_cast<float>(want[i % 13])) {
      throw Error(ErrorCode::kInternal,
                  "all-reduce result wrong at element " + std::to_string(i) + " of " +
                      std::to_string(count) + ": " + std::to_string(data[i]) + ", want " +
                      std::to_string(want[i % 13]),
                  {.rank = comm.rank()});
    }
  }
}

// Simulated seconds of one all-reduce of `count` floats (slowest rank, mean over iters).
double TimeAllreduce(comm::Communicator& comm, float* data, size_t count,
                     const comm::AllreduceOptions& options, int iters, bool check) {
  if (check) FillCheckPattern(data, count, comm.rank());
  comm::Allreduce(comm, data, count, options);  // warm-up (and the checked call)
  if (check) VerifySum(comm, data, count);
  const double t0 = AlignedStart(comm);
  for (int i = 0; i < iters; ++i) comm::Allreduce(comm, data, count, options);
  return MaxOverRanks(comm, (SimClock() - t0) / iters);
}

}  // namespace

int RunAllreduce(comm::Communicator& comm, const std::vector<std::string>& args) {
  const AllreduceArgs a = ParseAllreduceArgs(args);
  if (comm.rank() == 0) std::printf("algorithm,ran,ranks,nodes,bytes,seconds,busbw_GBps,check\n");
  for (const std::string& name : a.algorithms) {
    comm::AllreduceOptions options;
    options.algorithm = ParseSimAlgorithm(name);
    options.segment_bytes = a.segment_bytes;
    for (size_t bytes : a.sizes) {
      const size_t count = bytes / sizeof(float);
      void* raw =
          a.check ? std::malloc(count * sizeof(float)) : SMPI_SHARED_MALLOC(count * sizeof(float));
      auto* data = static_cast<float*>(raw);
      const double seconds = TimeAllreduce(comm, data, count, options, a.iters, a.check);
      if (a.check) {
        std::free(raw);
      } else {
        SMPI_SHARED_FREE(raw);
      }
      const comm::AllreduceAlgorithm ran = options.algorithm == comm::AllreduceAlgorithm::kAuto
                                               ? comm::ChooseAlgorithm(comm, bytes)
                                               : options.algorithm;
      const int p = comm.size();
      const double busbw = seconds > 0 ? bytes * 2.0 * (p - 1) / p / seconds / 1e9 : 0.0;
      if (comm.rank() == 0) {
        std::printf("%s,%s,%d,%d,%zu,%.9g,%.4f,%s\n", name.c_str(), comm::AlgorithmName(ran), p,
                    comm.num_nodes(), bytes, seconds, busbw, a.check ? "exact" : "none");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace shardflow::sim
