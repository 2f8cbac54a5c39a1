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

// Thresholds of ChooseAlgorithm, measured on the development machine (2 cores shared with other
// builds, OpenMPI 4.1.4, shared memory / vader + CMA, ranks oversubscribed at 4) with
//   mpirun --allow-run-as-root --oversubscribe -np N shardflow-bench allreduce
//       --min-bytes 4 --max-bytes 64M --step-factor 4 --iters 10..50 --repeats 3..7
//       --algorithms mpi,rd,ring,ring@32K,ring@512K,ring@8M
// (median of interleaved repeats; busbw relative to MPI_Allreduce in the same run; the machine
// was loaded, so ratios within ~10% are noise):
//   <= 8 KiB        rd 0.63-1.10x MPI at 2 and 4 ranks, ring 0.5-0.98x: MPI's own tuned
//                   small-message path is as good as ours, so auto passes through to it.
//   16 KiB..64 KiB  rd 1.21-1.56x MPI at 2 and 4 ranks (ring 0.78-1.03x): recursive doubling.
//   > 64 KiB        ring: at 4 ranks 1.0-1.2x MPI from 256 KiB, at 2 ranks 1.25-1.74x MPI from
//                   16 MiB; but at 2 ranks between 128 KiB and 4 MiB MPI_Allreduce measured
//                   2-17% faster than our ring (its 2-rank exchange is the same algorithm; the
//                   gap is per-call overhead), so 2 ranks below 8 MiB pass through to MPI.
// Ring segments: on shared memory the receiver performs each copy itself (CMA), so smaller
// segments buy no overlap and cost messages: 32 KiB segments ran at 0.5x of 8 MiB ones, 512 KiB
// at 0.9x; hence kDefaultSegmentBytes = 4 MiB. Over a network smaller segments would pay off.
//
// Shared memory (allreduce_shm.hpp), measured with --algorithms shm,shm-inplace,ring,mpi on the
// same machine: at 2 ranks shm ran 1.2-5.9x MPI_Allreduce's busbw from 4 B to 64 MiB; at 4
// ranks on 2 cores 1.5-4.7x (one hand-off for messages up to 16 KiB, three above). So when
// every rank shares one node, auto takes shm at every size. The rules below therefore serve
// communicators that span nodes; their thresholds are the single-node measurements above
// (across the two network-namespace "nodes" of tests/slurm, TCP over veth on 2 cores, the
// figures swung 2x between runs, too noisy to retune them).
// Across nodes, one rank each, the ring's 2 (p-1) latencies dominate until the message is
// about 10 p alpha B bytes (its latency term under 10% of its bandwidth term); below that
// MPI_Allreduce (OpenMPI: Rabenseifner, 2 log2 p latencies) wins. SimGrid on a 100 Gb/s fat
// tree (alpha ~1 us, B = 12.5 GB/s: 10 alpha B = 125 KB; docs/simulation.md, BENCHMARKS.md
// "Simulated scaling"): MPI 1.43x the ring at 16 ranks and 3.06x at 64 for 256 KiB, 8.19x at
// 256 ranks; 1.03x / 1.17x / 1.88x at 4 MiB; within 1% at 64 MiB. So below p x 128 KiB the
// ring gives way to MPI (2 MiB at 16 ranks, 8 MiB at 64, 32 MiB at 256).
// Several ranks per node (SimGrid, 8 nodes x 8 ranks on the IB tree, ib_fattree_8ppn.xml;
// BENCHMARKS.md "Simulated scaling"): hierarchical was fastest at 16 and 64 KiB (23.0 and
// 38.9 us; recursive doubling 37.9 and 139.6), MPI at 256 KiB (67.5 us; hierarchical 95.9), the
// flat ring from 1 MiB (193 us vs hierarchical 324; 4 MiB 664 vs 1236; 16 MiB 2649 vs 4885).
// So hierarchical serves 8-64 KiB there, and above it the flat rules with the node count.
// From 128 hosts OpenMPI's own rule (coll/tuned's fixed decisions, which SMPI's `ompi`
// selector copies) reduces to one rank and broadcasts back for small messages: below 128 KiB
// at 128-255 ranks, below 4 KiB at 256-511, below 2 KiB from 512; 2 log2 p latencies where
// recursive doubling takes log2 p. Simulated on the IB tree with every rank starting at the
// same instant (BENCHMARKS.md, "4096 ranks"): recursive doubling 10.6 vs MPI 21.9 us at 1 KiB
// on 128 ranks, 46.7 vs 396.0 at 64 KiB; 12.7 vs 26.3 at 1 KiB on 256; 25.0 vs 54.6 on 4096
// (MPI's broadcast there SimGrid's binomial tree; with the knomial one OpenMPI names, 21.6 on
// 128, 20.2 on 256 and 29.6 on 1024 against 18.8); the alpha-beta times agree. So from 128
// hosts recursive doubling serves everything up to 64 KiB, and at 128-255 hosts up to 128 KiB,
// where MPI turns to recursive doubling itself, then Rabenseifner.
constexpr size_t kMpiUpToBytes = 8 * 1024;
constexpr size_t kRecursiveDoublingUpToBytes = 64 * 1024;
constexpr size_t kTwoRankMpiBelowBytes = size_t{8} << 20;
constexpr size_t kRingFromBytesPerRank = 128 * 1024;
// Several ranks per node (SimGrid, 8 ranks per node on the IB tree, BENCHMARKS.md "Several
// ranks per node at 128-512 ranks"): hierarchical at 16 / 64 KiB took 39.2 / 61.3 us on 16
// nodes against MPI's 67.4 / 216.0 (OpenMPI reduces and broadcasts there), but 75.3 / 97.7 on
// 32 nodes against MPI's 17.9 / 29.8 (Rabenseifner), and 143.5 / 166.0 on 64 nodes against
// 22.0 / 34.0: the leaders' ring pays 2 (nodes - 1) latencies.
constexpr int kHierarchicalBelowRanks = 256;
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
