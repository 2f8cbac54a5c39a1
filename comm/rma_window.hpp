// RmaWindow: one-sided access (MPI RMA, passive target) to a block of memory every rank of a
// communicator exposes. A parameter server's one-sided transport (apps/train/strategies/
// parameter_server/parameter_server_rma.cpp) and shardflow-bench ps-transport use it: workers read
// a server's parameters with Get, put their gradients and small control records with Put, and the
// server, taking part in no transfer, reads and writes its own block under LockLocal.
//
//   RmaWindow window(comm, bytes);               // collective: every rank exposes `bytes`
//   window.LockLocal(); fill(window.local()); window.UnlockLocal();
//   window.Get(out, n, server, 0);               // out <- server's block [0, n) bytes
//   window.Put(in, n, server, offset);           // server's block [offset, offset + n) <- in
//   window.AccumulateFloats(g, count, server, 0);  // server's floats += g
//
// The memory is MPI's (MPI_Win_allocate), so that on one node the library may map it in every
// rank and copy with loads and stores (OpenMPI's osc sm) instead of emulating with messages.
// Each Get/Put/AccumulateFloats is one passive-target epoch (a shared lock on the target),
// complete on return: Get's data is in `out`, a Put or an accumulate is visible at the target,
// and an epoch that starts later sees it. LockLocal takes the exclusive lock on this rank's own
// block: no remote epoch overlaps the owner's reads and writes between LockLocal and UnlockLocal.
// Accumulates of different origins into the same elements are atomic per element. Sizes of any
// length are split into int-sized pieces inside the epoch. Errors throw Error(kCommunication)
// naming the call. A target that is inside no MPI call may delay transfers on transports without
// hardware one-sided support; the owners here call LockLocal in their loops, which progresses.
// Construction and destruction are collective.
// Thread-safety: one thread per window.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "comm/communicator.hpp"
#include "comm/mpi_handle.hpp"

namespace shardflow::comm {

class RmaWindow {
 public:
  RmaWindow(const Communicator& comm, size_t bytes);
  RmaWindow(const RmaWindow&) = delete;
  RmaWindow& operator=(const RmaWindow&) = delete;

  void* local() const { return base_; }
  size_t bytes() const { return bytes_; }
  void LockLocal() const;
  void UnlockLocal() const;
  void Get(void* out, size_t bytes, int target, size_t offset) const;
  void Put(const void* in, size_t bytes, int target, size_t offset) const;
  void AccumulateFloats(const float* in, size_t count, int target, size_t offset_bytes) const;

 private:
  MpiWin win_;  // not freed while an exception unwinds (mpi_handle.hpp)
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int rank_ = 0;
  size_t max_count_ = 0;
};

}  // namespace shardflow::comm
