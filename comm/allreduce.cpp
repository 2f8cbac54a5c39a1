#include "comm/allreduce.hpp"

#include <algorithm>
#include <iterator>

#include "comm/allreduce_hierarchical.hpp"
#include "comm/allreduce_mpi.hpp"
#include "comm/allreduce_recursive_doubling.hpp"
#include "comm/allreduce_ring.hpp"
#include "comm/allreduce_shm.hpp"
#include "comm/shm_window.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

// Thresholds of ChooseAlgorithm (one node takes kShm at every size, so these serve
// communicators that span nodes). Measured: docs/design.md decision 14, "Where the all-reduce
// thresholds come from".
// One rank per host: MPI's tuned small-message path up to 8 KiB, recursive doubling to 64 KiB;
// above, 2 ranks stay with MPI below 8 MiB, and the ring, whose 2 (p - 1) latencies dominate
// short messages, starts at hosts x 128 KiB.
constexpr size_t kMpiUpToBytes = 8 * 1024;
constexpr size_t kRecursiveDoublingUpToBytes = 64 * 1024;
constexpr size_t kTwoRankMpiBelowBytes = size_t{8} << 20;
constexpr size_t kRingFromBytesPerRank = 128 * 1024;
// Several ranks per node: hierarchical up to 64 KiB, below 256 ranks (the leaders' ring pays
// 2 (nodes - 1) latencies, and from 32 nodes MPI's Rabenseifner wins).
constexpr int kHierarchicalBelowRanks = 256;
// One rank per host from 128 hosts: OpenMPI reduces to one rank and broadcasts back small
// messages (below 128 KiB at 128-255 hosts), so recursive doubling takes them up to 64 KiB, and
// up to 128 KiB at 128-255 hosts.
constexpr int kMpiReducesAndBroadcastsFromHosts = 128;
constexpr int kMpiReducesAndBroadcastsLongBelowHosts = 256;
constexpr size_t kRecursiveDoublingUpToBytesThere = 128 * 1024;

void AllreduceAuto(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  AllreduceFunctionFor(ChooseAlgorithm(comm, count * sizeof(float)))(comm, data, count, options);
}

// Name for the watchdog's report.
const char* ScopeName(AllreduceAlgorithm algorithm) {
  static constexpr const char* kScopes[] = {
      "allreduce(auto)",         "allreduce(ring)", "allreduce(recursive_doubling)",
      "allreduce(hierarchical)", "allreduce(mpi)",  "allreduce(shm)"};
  const auto index = static_cast<size_t>(algorithm);
  return index < std::size(kScopes) ? kScopes[index] : "allreduce";
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
    case AllreduceAlgorithm::kShm:
      return "shm";
  }
  return "?";
}

AllreduceAlgorithm ParseAlgorithm(const std::string& text) {
  if (text == "auto") return AllreduceAlgorithm::kAuto;
  if (text == "ring") return AllreduceAlgorithm::kRing;
  if (text == "rd" || text == "recursive_doubling") return AllreduceAlgorithm::kRecursiveDoubling;
  if (text == "hierarchical") return AllreduceAlgorithm::kHierarchical;
  if (text == "mpi") return AllreduceAlgorithm::kMpi;
  if (text == "shm") return AllreduceAlgorithm::kShm;
  throw Error(ErrorCode::kInvalidArgument, "unknown all-reduce algorithm '" + text + "'",
              {.hint = "use auto, ring, rd, hierarchical, mpi or shm"});
}

AllreduceTopology TopologyOf(const Communicator& comm) {
  return {.ranks = comm.size(),
          .num_nodes = comm.num_nodes(),
          .max_local_size = comm.max_local_size(),
          .known = comm.node() != nullptr,
          .nodes_contiguous = comm.nodes_contiguous(),
          .shm_unavailable = comm.shm_unavailable()};
}

AllreduceAlgorithm ChooseAlgorithm(const AllreduceTopology& t, size_t bytes) {
  // Every rank on one node (known only with topology): shared memory.
  if (t.ranks > 1 && t.known && t.num_nodes == 1 && !t.shm_unavailable) {
    return AllreduceAlgorithm::kShm;
  }
  const bool shared_nodes = t.num_nodes > 1 && t.max_local_size > 1 && t.known;
  const int hosts = shared_nodes ? t.num_nodes : t.ranks;
  // One rank per host from 128 hosts: MPI's small-message path reduces and broadcasts.
  const bool mpi_reduces_first = !shared_nodes && t.num_nodes >= kMpiReducesAndBroadcastsFromHosts;
  if (bytes <= kMpiUpToBytes && !mpi_reduces_first) return AllreduceAlgorithm::kMpi;
  // Several nodes with several ranks each: up to 64 KiB the leaders' ring of few hops beats
  // recursive doubling, whose whole-message exchanges share each node's link among its ranks;
  // but from 256 ranks MPI's Rabenseifner (OpenMPI's pick there from 4 KiB) beats the ring of
  // 32 or more leaders.
  if (bytes <= kRecursiveDoublingUpToBytes) {
    if (!shared_nodes) return AllreduceAlgorithm::kRecursiveDoubling;
    return t.ranks < kHierarchicalBelowRanks ? AllreduceAlgorithm::kHierarchical
                                             : AllreduceAlgorithm::kMpi;
  }
  if (mpi_reduces_first && t.num_nodes < kMpiReducesAndBroadcastsLongBelowHosts &&
      bytes <= kRecursiveDoublingUpToBytesThere) {
    return AllreduceAlgorithm::kRecursiveDoubling;
  }
  // Above, hierarchical moves the whole message through each node's reduce and broadcast
  // trees, while a ring in rank order over block-placed ranks crosses every node boundary once
  // at the link's full rate: the flat rules below apply, with nodes for hosts in the ring's
  // latency term (its intra-node hops are short). Ranks dealt round-robin over the nodes would
  // cross nodes at every hop: hierarchical keeps them.
  if (shared_nodes && !t.nodes_contiguous) return AllreduceAlgorithm::kHierarchical;
  if (t.ranks == 2 && bytes < kTwoRankMpiBelowBytes) return AllreduceAlgorithm::kMpi;
  if (bytes < static_cast<size_t>(hosts) * kRingFromBytesPerRank) return AllreduceAlgorithm::kMpi;
  return AllreduceAlgorithm::kRing;
}

AllreduceAlgorithm ChooseAlgorithm(const Communicator& comm, size_t bytes) {
  return ChooseAlgorithm(TopologyOf(comm), bytes);
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
    case AllreduceAlgorithm::kShm:
      return &AllreduceShm;
  }
  throw Error(ErrorCode::kInvalidArgument, "invalid all-reduce algorithm value");
}

void Allreduce(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  if (count > 0 && data == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "all-reduce of a null buffer with count > 0",
                {.rank = comm.rank()});
  }
  AllreduceAlgorithm algorithm = options.algorithm == AllreduceAlgorithm::kAuto
                                     ? ChooseAlgorithm(comm, count * sizeof(float))
                                     : options.algorithm;
  CollectiveScope scope(comm.watchdog(), ScopeName(algorithm), count * sizeof(float));
  try {
    AllreduceFunctionFor(algorithm)(comm, data, count, options);
  } catch (const ShmUnavailable&) {
    // No room for the window (every rank knows it, data untouched): auto falls back to the
    // message-based algorithms for good; an explicit shm request fails with the reason.
    if (options.algorithm != AllreduceAlgorithm::kAuto) throw;
    comm.set_shm_unavailable();
    algorithm = ChooseAlgorithm(comm, count * sizeof(float));
    AllreduceFunctionFor(algorithm)(comm, data, count, options);
  }
  // The shared-memory algorithm divides while it sums (one pass less over the buffer).
  if (options.mode == ReduceMode::kAverage && comm.size() > 1 &&
      algorithm != AllreduceAlgorithm::kShm) {
    const auto n = static_cast<float>(comm.size());
    for (size_t i = 0; i < count; ++i) data[i] /= n;
  }
}

namespace {

// The wire format `algorithm` really sends with `wire` asked for.
WireFormat EffectiveWire(const Communicator& comm, AllreduceAlgorithm algorithm, WireFormat wire) {
  if (algorithm == AllreduceAlgorithm::kRing) return wire;
  if (algorithm == AllreduceAlgorithm::kHierarchical && comm.num_nodes() > 1) return wire;
  return WireFormat::kFloat32;
}

}  // namespace

std::string DescribeAllreducePath(const Communicator& comm, const AllreduceOptions& options,
                                  const std::vector<size_t>& bucket_bytes) {
  // (algorithm, wire) -> buckets, in first-use order.
  std::vector<std::pair<std::pair<AllreduceAlgorithm, WireFormat>, int>> uses;
  for (size_t bytes : bucket_bytes) {
    const AllreduceAlgorithm a = options.algorithm == AllreduceAlgorithm::kAuto
                                     ? ChooseAlgorithm(comm, bytes)
                                     : options.algorithm;
    const auto key = std::make_pair(a, EffectiveWire(comm, a, options.wire));
    auto it = std::find_if(uses.begin(), uses.end(), [&](const auto& u) { return u.first == key; });
    if (it == uses.end()) {
      uses.push_back({key, 1});
    } else {
      ++it->second;
    }
  }
  std::string out = options.algorithm == AllreduceAlgorithm::kAuto ? "auto: " : "";
  bool narrowed_away = false;
  for (size_t i = 0; i < uses.size(); ++i) {
    const auto& [key, n] = uses[i];
    if (i > 0) out += "; ";
    if (uses.size() > 1) out += std::to_string(n) + " bucket(s) by ";
    out += std::string(AlgorithmName(key.first)) + ", wire " + WireFormatName(key.second);
    narrowed_away = narrowed_away || key.second != options.wire;
  }
  if (narrowed_away) {
    out += std::string(" (dist.wire = ") + WireFormatName(options.wire) +
           " applies to ring and to hierarchical across nodes only)";
  }
  return out;
}

}  // namespace shardflow::comm
