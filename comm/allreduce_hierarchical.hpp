// Hierarchical all-reduce for several ranks per node and several nodes:
//   1. reduce within each node onto its leader (local rank 0) over the node communicator,
//      through shared memory (MPI_Reduce);
//   2. ring all-reduce (allreduce_ring.hpp) among the node leaders, one rank per node, so only
//      leaders use the network and each node's traffic is 2 (nodes - 1) / nodes of the buffer;
//   3. broadcast the result from each leader within its node (MPI_Bcast).
// With one node step 2 is empty; with one rank per node steps 1 and 3 are. The 16-bit wire
// formats apply to step 2 only. Needs a communicator built with discover_topology.
#pragma once

#include <cstddef>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// Sum in place. Throws Error(kInvalidArgument) if comm has no topology.
void AllreduceHierarchical(Communicator& comm, float* data, size_t count,
                           const AllreduceOptions& options);

}  // namespace shardflow::comm
