// ShmWindow: one block of memory per rank of a one-node communicator, every block mapped in
// every rank (MPI_Win_allocate_shared), each headed by a control line of counters that ranks
// publish and wait on. The building block of the shared-memory all-reduces (allreduce_shm.hpp).
//
//   ShmWindow window(comm.raw(), bytes);          // collective
//   Publish(window.control(me).posted, round, window.control(me));
//   WaitFor(window.control(peer).posted, round, window.control(peer), window.spins());
//   std::memcpy(mine, window.block(peer), n);     // the peer's bytes, no message
//
// Counters hold round numbers that wrap at 2^32 (Reached compares them modulo 2^32). Waiting
// spins (spins()), then yields the core a bounded number of times, then sleeps on a
// process-shared futex, so a rank whose peer is late gives its core to its other threads;
// Publish issues FUTEX_WAKE only when someone sleeps.
// Construction and destruction are collective. The constructor throws Error(kInvalidArgument),
// on every rank alike, when the ranks do not all share one node, and ShmUnavailable when the
// shared-memory file system has no room for the window (checked before asking MPI, which hangs
// on that failure). A destructor running while an exception unwinds does not free the window
// (that is collective and would block a failing rank; mpi_handle.hpp); the process is about to
// end.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/mpi_handle.hpp"
#include "core/error.hpp"

namespace shardflow::comm {

// Thrown, on every rank alike, when the node cannot hold the window (too little room in the
// shared-memory file system); callers may fall back to message-based algorithms.
class ShmUnavailable : public Error {
 public:
  using Error::Error;
};

using ShmCounter = std::atomic<uint32_t>;

struct alignas(64) ShmControl {
  alignas(64) ShmCounter posted{0};
  alignas(64) ShmCounter reduced{0};
  alignas(64) ShmCounter done{0};
  alignas(64) ShmCounter sleepers{0};  // threads of any rank asleep on one of these counters
};

// True when `value` is not behind `target` (modulo 2^32).
inline bool Reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}
// Blocks until counter (in owner's control line) has reached target, spinning `spins` times
// first (ShmWindow::spins()).
void WaitFor(ShmCounter& counter, uint32_t target, ShmControl& owner, int spins);
// counter = value (release), waking sleepers of owner's line if any.
void Publish(ShmCounter& counter, uint32_t value, ShmControl& owner);

class ShmWindow {
 public:
  ShmWindow(MPI_Comm comm, size_t bytes_per_rank);
  ~ShmWindow();
  ShmWindow(const ShmWindow&) = delete;
  ShmWindow& operator=(const ShmWindow&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(blocks_.size()); }
  size_t bytes_per_rank() const { return bytes_per_rank_; }
  // How long WaitFor spins before yielding: long when every rank has a processor of its own,
  // short when ranks outnumber the node's processors.
  int spins() const { return spins_; }
  ShmControl& control(int q) const;
  // Rank q's block of bytes_per_rank() bytes, 64-byte aligned.
  char* block(int q) const;

 private:
  MpiComm comm_;  // declared before win_: freed after it
  MpiWin win_;
  int rank_ = 0;
  size_t bytes_per_rank_;
  int spins_ = 0;
  std::vector<char*> heads_;
  std::vector<char*> blocks_;
};

}  // namespace shardflow::comm
