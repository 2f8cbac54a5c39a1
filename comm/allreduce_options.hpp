// AllreduceOptions: what every all-reduce algorithm takes besides the buffer, and the enums it
// names. A header of its own so that the dependency points one way: the algorithm headers
// (allreduce_ring.hpp, allreduce_shm.hpp, ...) include this one, and allreduce.cpp, which
// dispatches to them, includes theirs; allreduce.hpp includes this file for its users.
#pragma once

#include <cstddef>

#include "comm/wire_format.hpp"

namespace shardflow::comm {

// Meanings and the files that implement them: allreduce.hpp.
enum class AllreduceAlgorithm { kAuto, kRing, kRecursiveDoubling, kHierarchical, kMpi, kShm };
enum class ReduceMode { kSum, kAverage };

// Ring segment size when AllreduceOptions::segment_bytes is 0: 4 MiB, since on shared memory
// larger segments won (measured: docs/design.md decision 14).
inline constexpr size_t kDefaultSegmentBytes = size_t{4} << 20;

struct AllreduceOptions {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto;
  ReduceMode mode = ReduceMode::kSum;
  // The 16-bit formats apply to kRing and to kHierarchical's leader ring only.
  WireFormat wire = WireFormat::kFloat32;
  // Ring segment size in bytes of float32 data (0: kDefaultSegmentBytes); kShm's staging slot
  // size (0: kDefaultShmSlotBytes). Smaller segments overlap transfer and reduction more
  // finely, larger ones cost fewer messages (on shared memory larger wins).
  size_t segment_bytes = 0;
};

}  // namespace shardflow::comm
