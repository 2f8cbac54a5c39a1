// FloatWindow: one-sided access (MPI RMA, passive target) to a float buffer every rank of a
// communicator exposes. Built to measure a parameter server's other transport — workers reading
// a server's parameters with MPI_Get and adding their gradients with MPI_Accumulate, the server
// taking no part — against the point-to-point protocol apps/train/parameter_server.cpp uses
// (shardflow-bench ps-transport; docs/design.md decision 38 says which is the default and why).
//
//   FloatWindow window(comm, n);                 // collective: every rank exposes n floats
//   std::fill_n(window.local(), n, 1.0f);         // this rank's part (MPI's memory)
//   window.Get(out, n, server, 0);               // out <- server's local()[0, n)
//   window.Accumulate(grads, n, server, 0);      // server's local()[0, n) += grads
// The memory is MPI's (MPI_Win_allocate), so that on one node the library may map it in every
// rank and copy with loads and stores (OpenMPI's osc sm) instead of emulating with messages.
//
// Each call is one passive-target epoch (a shared lock on the target), complete on return:
// Get's data is in `out`, Accumulate's sums are visible at the target. Accumulates of different
// origins into the same elements are atomic per element (MPI's accumulate ordering). Counts of
// any size are split into int-sized pieces inside the epoch. Errors throw Error(kCommunication)
// naming the call.
// Construction and destruction are collective. A target
// that is inside no MPI call may delay a transfer on transports without hardware one-sided
// support: a target waits inside MPI (a barrier, a receive) while others access it.
// Thread-safety: one thread per window.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "comm/communicator.hpp"

namespace shardflow::comm {

class FloatWindow {
 public:
  FloatWindow(const Communicator& comm, size_t count);
  ~FloatWindow();
  FloatWindow(const FloatWindow&) = delete;
  FloatWindow& operator=(const FloatWindow&) = delete;

  float* local() const { return base_; }
  void Get(float* out, size_t count, int target, size_t offset) const;
  void Accumulate(const float* in, size_t count, int target, size_t offset) const;

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  float* base_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;
  size_t max_count_ = 0;
};

}  // namespace shardflow::comm
