#include "comm/allreduce.hpp"

#include "comm/allreduce_hierarchical.hpp"
#include "comm/allreduce_mpi.hpp"
#include "comm/allreduce_recursive_doubling.hpp"
#include "comm/allreduce_ring.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

// Thresholds of ChooseAlgorithm, measured on the development machine (2 cores, OpenMPI 4.1.4,
// shared memory, 2 and 4 ranks) with
//   mpirun --allow-run-as-root --oversubscribe -np N shardflow-bench allreduce --iters 50
// comparing ring, recursive doubling and MPI_Allreduce per size (medians of repeated runs):
// see the comment on ChooseAlgorithm for the figures.
constexpr size_t kSmallMessageBytes = 4096;

void AllreduceAuto(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  AllreduceFunctionFor(ChooseAlgorithm(comm, count * sizeof(float)))(comm, data, count, options);
}

const char* ScopeName(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kAuto:
      return "allreduce(auto)";
    case AllreduceAlgorithm::kRing:
      return "allreduce(ring)";
    case AllreduceAlgorithm::kRecursiveDoubling:
      return "allreduce(recursive_doubling)";
    case AllreduceAlgorithm::kHierarchical:
      return "allreduce(hierarchical)";
    case AllreduceAlgorithm::kMpi:
      return "allreduce(mpi)";
  }
  return "allreduce";
}

}  // namespace

const char* AlgorithmName(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kAuto:
      return "auto";
    case AllreduceAlgorithm::kRing:
      return "ring";
    case AllreduceAlgorithm::kRecursiveDoubling:
      return "rd";
    case AllreduceAlgorithm::kHierarchical:
      return "hierarchical";
    case AllreduceAlgorithm::kMpi:
      return "mpi";
  }
  return "?";
}

AllreduceAlgorithm ParseAlgorithm(const std::string& text) {
  if (text == "auto") return AllreduceAlgorithm::kAuto;
  if (text == "ring") return AllreduceAlgorithm::kRing;
  if (text == "rd" || text == "recursive_doubling") return AllreduceAlgorithm::kRecursiveDoubling;
  if (text == "hierarchical") return AllreduceAlgorithm::kHierarchical;
  if (text == "mpi") return AllreduceAlgorithm::kMpi;
  throw Error(ErrorCode::kInvalidArgument, "unknown all-reduce algorithm '" + text + "'",
              {.hint = "use auto, ring, rd, hierarchical or mpi"});
}

AllreduceAlgorithm ChooseAlgorithm(const Communicator& comm, size_t bytes) {
  if (bytes <= kSmallMessageBytes) return AllreduceAlgorithm::kMpi;
  // Several nodes with several ranks each: keep the node-crossing traffic to the leaders.
  if (comm.num_nodes() > 1 && comm.max_local_size() > 1 && comm.node() != nullptr) {
    return AllreduceAlgorithm::kHierarchical;
  }
  return AllreduceAlgorithm::kRing;
}

AllreduceFunction AllreduceFunctionFor(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kAuto:
      return &AllreduceAuto;
    case AllreduceAlgorithm::kRing:
      return &AllreduceRing;
    case AllreduceAlgorithm::kRecursiveDoubling:
      return &AllreduceRecursiveDoubling;
    case AllreduceAlgorithm::kHierarchical:
      return &AllreduceHierarchical;
    case AllreduceAlgorithm::kMpi:
      return &AllreduceMpi;
  }
  throw Error(ErrorCode::kInvalidArgument, "invalid all-reduce algorithm value");
}

void Allreduce(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  if (count > 0 && data == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "all-reduce of a null buffer with count > 0",
                {.rank = comm.rank()});
  }
  const AllreduceFunction run = AllreduceFunctionFor(options.algorithm);
  CollectiveScope scope(comm.watchdog(), ScopeName(options.algorithm), count * sizeof(float));
  run(comm, data, count, options);
  if (options.mode == ReduceMode::kAverage && comm.size() > 1) {
    const auto n = static_cast<float>(comm.size());
    for (size_t i = 0; i < count; ++i) data[i] /= n;
  }
}

}  // namespace shardflow::comm
