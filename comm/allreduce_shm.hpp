// Shared-memory all-reduce for ranks of one node: no messages, no kernel copies, blocking waits.
//
// Every rank owns a block of a window allocated with MPI_Win_allocate_shared: a control line of
// three counters (posted, reduced, done) and two staging slots. The buffer is processed in
// rounds of at most one slot (segment_bytes, default kDefaultShmSlotBytes); round R uses slot
// R % 2, so a rank may run one round ahead of the slowest peer. In round R, rank r:
//   1. waits until every peer has finished round R - 2 (its slot is free again);
//   2. copies its piece of the buffer into its slot and publishes posted = R;
//   3. once every peer has posted R, sums sub-piece r (the balanced r-th part of the piece) over
//      all ranks' slots in rank order 0..n-1, writes the sum to its buffer and over its own
//      slot's sub-piece r, and publishes reduced = R;
//   4. copies every peer q's reduced sub-piece q out of q's slot as soon as q has reduced R,
//      then publishes done = R.
// Each sub-piece is summed by exactly one rank and copied by the others, so every rank ends with
// identical bits. Per rank and element: one copy in, one n-way read, one copy out; no page
// pinning or system call on the data path (shared-memory MPI with CMA pins the peer's pages on
// every large message).
//
// Waiting: a short spin, then a futex sleep on the counter (process-shared), so a rank whose
// peer is late gives its core to the compute and input threads instead of polling the way
// MPI's progress engine does. The publisher issues FUTEX_WAKE only when someone sleeps.
//
// ReduceMode::kAverage is applied here, in the summing pass (Allreduce does not divide again).
// Requires every rank of the communicator on one node (throws Error(kInvalidArgument)
// otherwise, on every rank alike). Float32 only: options.wire is ignored. The window is made
// on first use, collectively, and kept with the communicator (Communicator::shm_state()).
#pragma once

#include <cstddef>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// Staging slot size per rank when options.segment_bytes is 0 (measured, see allreduce.cpp).
inline constexpr size_t kDefaultShmSlotBytes = size_t{1} << 20;

void AllreduceShm(Communicator& comm, float* data, size_t count, const AllreduceOptions& options);

}  // namespace shardflow::comm
