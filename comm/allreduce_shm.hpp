// Shared-memory all-reduce for ranks of one node: no messages, no kernel copies, blocking waits.
//
// Every rank owns a block of a window allocated with MPI_Win_allocate_shared (shm_window.hpp): a
// control line of three counters (posted, reduced, done) and two staging slots. The buffer is
// processed in rounds of at most one slot (segment_bytes, default kDefaultShmSlotBytes); round R
// uses slot R % 2, so a rank may run one round ahead of the slowest peer. In round R, rank r:
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
// every large message). Messages of at most 16 KiB take one hand-off instead of three: every
// rank posts its whole message and sums all of them itself, in rank order (the same bits on
// every rank again), then publishes done.
//
// Waiting (shm_window.hpp): a spin, a bounded number of yields, then a futex sleep on the
// counter (process-shared), so a rank whose peer is late gives its core to the compute and
// input threads instead of polling the way MPI's progress engine does.
//
// ReduceMode::kAverage is applied here, in the summing pass (Allreduce does not divide again).
// Requires every rank of the communicator on one node (throws Error(kInvalidArgument)
// otherwise, on every rank alike) and room for the window in the node's shared-memory file
// system (ShmUnavailable otherwise; Allreduce with kAuto then falls back to the message-based
// algorithms). Float32 only: options.wire is ignored. The window is made on first use,
// collectively, and kept with the communicator (Communicator::shm_state()).
#pragma once

#include <cstddef>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"
#include "comm/shm_window.hpp"

namespace shardflow::comm {

// Staging slot size per rank when options.segment_bytes is 0 (the slot size the shm figures of
// docs/design.md decision 14 were measured with).
inline constexpr size_t kDefaultShmSlotBytes = size_t{1} << 20;

void AllreduceShm(Communicator& comm, float* data, size_t count, const AllreduceOptions& options);

// A float array per rank that every rank of a one-node communicator can read and write. A
// data-parallel job keeps its gradient arena in one, so that AllreduceShared reduces it with
// no staging copies: rank r sums sub-piece r of a region over every rank's array, in rank
// order, and writes the sum straight into every rank's array (per rank and element: one n-way
// read, one n-way write; AllreduceShm adds a copy in and a copy out).
// Collective construction and destruction; throws like ShmWindow when ranks span nodes.
class SharedFloatBuffer {
 public:
  SharedFloatBuffer(Communicator& comm, size_t count);  // zero-filled
  SharedFloatBuffer(const SharedFloatBuffer&) = delete;
  SharedFloatBuffer& operator=(const SharedFloatBuffer&) = delete;

  float* data();       // this rank's array
  float* peer(int q);  // rank q's array
  size_t size() const { return count_; }
  Communicator& comm() { return comm_; }
  ShmWindow& window() { return window_; }
  uint32_t NextRound() { return ++round_; }

 private:
  Communicator& comm_;
  size_t count_;
  ShmWindow window_;
  uint32_t round_ = 0;
};

// All-reduces elements [offset, offset + count) of every rank's array in place, under the
// communicator's watchdog; kAverage divides in the same pass. Every rank calls it with the same
// offset and count, in the same order. On return the region holds identical bits on every rank
// and no peer touches it again until the next call for it. Throws Error(kInvalidArgument) for a
// region outside the array.
void AllreduceShared(SharedFloatBuffer& buffer, size_t offset, size_t count,
                     ReduceMode mode = ReduceMode::kSum);

}  // namespace shardflow::comm
