// All-reduce of float32 buffers, in place: one call shape for every algorithm.
//
//   Allreduce(comm, data, count, {.algorithm = AllreduceAlgorithm::kAuto,
//                                 .mode = ReduceMode::kAverage});
//
// On return every rank's data[0..count) holds the element-wise sum (or the mean, sum / size) of
// all ranks' inputs. Every algorithm gives all ranks bitwise-identical results. count may be 0
// (a no-op that still counts as a collective) or any size; it need not divide by the rank count.
//
// Algorithms (one file each):
//   kRing               allreduce_ring.hpp: bandwidth-optimal, pipelined; large messages
//   kRecursiveDoubling  allreduce_recursive_doubling.hpp: log2(n) steps; small messages
//   kHierarchical       allreduce_hierarchical.hpp: reduce in the node, ring over node
//                       leaders, broadcast in the node; several ranks per node, many nodes
//   kMpi                allreduce_mpi.hpp: MPI_Allreduce as provided by the MPI library
//   kShm                allreduce_shm.hpp: every rank on one node; through a shared-memory
//                       window, no messages, blocking waits
//   kAuto               picks one of the above by message size and topology (ChooseAlgorithm;
//                       its thresholds and their measurements: docs/design.md decision 14)
// The options (AllreduceOptions, ReduceMode) are in allreduce_options.hpp, which the algorithm
// headers include; this file includes it, so users of Allreduce need only this one.
// The 16-bit wire formats (wire_format.hpp) apply to kRing and to the leader ring of
// kHierarchical; the other algorithms always send float32 (they serve small messages, where
// bytes on the wire do not dominate).
//
// Thread-safety: as Communicator (one thread at a time per communicator). Every call runs under
// the communicator's watchdog.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// "auto" | "ring" | "rd" (recursive_doubling) | "hierarchical" | "mpi" | "shm".
const char* AlgorithmName(AllreduceAlgorithm algorithm);
// Throws Error(kInvalidArgument) naming the text.
AllreduceAlgorithm ParseAlgorithm(const std::string& text);

// What kAuto's choice depends on: values every rank of a communicator agrees on.
struct AllreduceTopology {
  int ranks = 1;
  int num_nodes = 1;
  int max_local_size = 1;
  bool known = false;  // the communicator discovered its nodes
  bool nodes_contiguous = true;
  bool shm_unavailable = false;
};
AllreduceTopology TopologyOf(const Communicator& comm);

// The algorithm kAuto runs for a message of `bytes` on `comm` (never kAuto). The same on every
// rank: it depends only on bytes and values every rank agrees on.
AllreduceAlgorithm ChooseAlgorithm(const Communicator& comm, size_t bytes);
// The same rule for any topology (tests and the simulation's mirror check it past 4 ranks).
AllreduceAlgorithm ChooseAlgorithm(const AllreduceTopology& topology, size_t bytes);

// The one call shape every algorithm has. Algorithms do not apply ReduceMode; Allreduce does,
// except kShm, which divides while it sums (the same division, one pass less over the buffer).
using AllreduceFunction = void (*)(Communicator& comm, float* data, size_t count,
                                   const AllreduceOptions& options);
// Factory: the function that runs `algorithm` (kAuto resolves per call through ChooseAlgorithm).
AllreduceFunction AllreduceFunctionFor(AllreduceAlgorithm algorithm);

// What buckets of these sizes (bytes of float32) travel as over `comm`, for a log line: the
// algorithm each runs (kAuto resolved per size) and the wire format it really sends. A 16-bit
// `options.wire` applies to kRing and to kHierarchical's leader ring (more than one node);
// elsewhere the line says float32 and that the option does not apply. Not collective.
std::string DescribeAllreducePath(const Communicator& comm, const AllreduceOptions& options,
                                  const std::vector<size_t>& bucket_bytes);

// REQUIRES: data points at count floats (may be null when count == 0); collective over comm,
// every rank with the same count and options.
void Allreduce(Communicator& comm, float* data, size_t count, const AllreduceOptions& options = {});

}  // namespace shardflow::comm
