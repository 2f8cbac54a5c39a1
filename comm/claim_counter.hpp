// ClaimCounter: a job-wide counter that hands out consecutive integers (work items) to whichever
// rank asks first, with a fence that stops the hand-out at an agreed count. Dynamic sharding
// (apps/train/dynamic_shard.hpp) claims global batch indices with it: a fast worker simply
// claims more of them than a slow one.
//
//   ClaimCounter counter(comm, /*owner=*/k, /*start=*/0);   // collective
//   ClaimCounter::Claim c = counter.Next();  // c.index unique over the job; c.fence as it was
//   counter.LowerFence(counter.Peek());      // every later Next() sees a fence <= this
//
// The owner's block holds {next, fence}. Next() is one exclusive passive-target epoch on the
// owner (MPI_Fetch_and_op adds 1 to `next`, MPI_Get reads `fence` in the same epoch), so a
// claim and the fence it reports are one atomic step with respect to LowerFence, which sets
// fence = min(fence, value) under the same exclusive lock. Indices are handed out without gaps
// from `start`, each exactly once; a claim at or past the fence is still handed out (the caller
// keeps it for after the fence). The owner need not call anything for claims to progress on one
// node (OpenMPI maps the block); on message-emulated transports a claim may wait until the
// owner enters MPI, which a parameter server's event loop does continually.
// Errors throw Error(kCommunication) naming the call. Construction and destruction are
// collective. Thread-safety: Next, Peek and LowerFence take a mutex for their epoch (MPI allows
// one process one lock epoch per target window at a time: two threads' concurrent MPI_Win_lock
// failed with MPI_ERR_RMA_SYNC under load); calling them from several threads of one rank
// needs MPI_THREAD_MULTIPLE.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <limits>

#include "comm/communicator.hpp"
#include "comm/mpi_handle.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::comm {

class ClaimCounter {
 public:
  static constexpr int64_t kNoFence = std::numeric_limits<int64_t>::max();
  struct Claim {
    int64_t index = 0;
    int64_t fence = kNoFence;
  };

  ClaimCounter(const Communicator& comm, int owner, int64_t start);
  ClaimCounter(const ClaimCounter&) = delete;
  ClaimCounter& operator=(const ClaimCounter&) = delete;

  Claim Next() const EXCLUDES(epoch_mu_);
  // The next index Next() would hand out, and the fence (no claim made).
  Claim Peek() const EXCLUDES(epoch_mu_);
  void LowerFence(int64_t value) const EXCLUDES(epoch_mu_);

 private:
  mutable Mutex epoch_mu_;            // one passive-target epoch of this rank at a time
  MpiWin win_ GUARDED_BY(epoch_mu_);  // not freed while an exception unwinds (mpi_handle.hpp)
  int64_t* base_ = nullptr;
  int owner_ = 0;
};

}  // namespace shardflow::comm
