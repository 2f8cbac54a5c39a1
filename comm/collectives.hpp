// Thin collectives besides all-reduce: broadcast, reductions of int64 and double, an int64
// all-gather, variable-length gathers to one rank, and a barrier.
//
//   Broadcast(comm, params.data(), params.size());                   // rank 0's parameters
//   int64_t steps = AllreduceInt64(comm, my_steps, ReduceOp::kMin);  // agree on steps/epoch
//   double wall = AllreduceDouble(comm, my_wall, ReduceOp::kMax);
//   auto blobs = GatherBytes(comm, state.data(), state.size());      // every rank's, on rank 0
//   auto ids = GatherConcat(comm, mine.data(), mine.size());          // rank-ordered, on rank 0
//
// Every call is one collective of the communicator's watchdog (a rank that never joins makes the
// job end with a report naming it) and one trace event (core/trace.hpp). Counts and lengths are
// size_t, any size: messages longer than MPI's int are sent as several pieces
// (message_pieces.hpp), never cast. All ranks must make the same calls in the same order, with
// the same root and, where stated, the same count.
// Thread-safety: as Communicator (one thread at a time per communicator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/communicator.hpp"

namespace shardflow::comm {

enum class ReduceOp { kSum, kMin, kMax };
using Int64Op = ReduceOp;  // the earlier name, kept for existing callers

// A non-blocking all-reduce of one int64 (MPI_Iallreduce), for an agreement that should cost
// no wait: Start posts it, other work (other collectives included, in the same order on every
// rank) runs meanwhile, and Finish completes it under the communicator's watchdog and returns
// the reduced value. A destroyed round that was started and not finished is an error of the
// caller (the communicator would be freed under it).
class AsyncAllreduceInt64 {
 public:
  void Start(Communicator& comm, int64_t value, ReduceOp op);
  bool pending() const { return comm_ != nullptr; }
  int64_t Finish();

 private:
  Communicator* comm_ = nullptr;
  int64_t in_ = 0, out_ = 0;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

// Copies root's data[0..count) to every rank. REQUIRES: same count on every rank.
// Throws Error(kInvalidArgument) for a root that is not a rank of `comm`.
void Broadcast(Communicator& comm, float* data, size_t count, int root = 0);
void Broadcast(Communicator& comm, double* data, size_t count, int root = 0);
// Root's bytes[0..size) to every rank. REQUIRES: same size on every rank.
void BroadcastBytes(Communicator& comm, void* bytes, size_t size, int root = 0);
// Root's string to every rank (the length travels first; other ranks' *text is replaced).
void BroadcastString(Communicator& comm, std::string* text, int root = 0);

// In place over values[0..count). REQUIRES: same count on every rank.
void AllreduceInt64(Communicator& comm, int64_t* values, size_t count, ReduceOp op);
// One value; returns the result.
int64_t AllreduceInt64(Communicator& comm, int64_t value, ReduceOp op);
// In place over values[0..count); sums are in rank order as the MPI library adds them.
// REQUIRES: same count on every rank.
void AllreduceDoubles(Communicator& comm, double* values, size_t count, ReduceOp op);
double AllreduceDouble(Communicator& comm, double value, ReduceOp op);

// Every rank's value, in rank order, on every rank.
std::vector<int64_t> AllgatherInt64(Communicator& comm, int64_t value);

// Variable-length byte gather to root (size_t lengths, any size, under the watchdog); returns
// all ranks' blobs on root, in rank order (empty vector elsewhere). Ranks may pass 0 bytes.
std::vector<std::vector<uint8_t>> GatherBytes(Communicator& comm, const void* data, size_t bytes,
                                              int root = 0);

// Every rank's byte lengths on root, in rank order (empty elsewhere); then every rank's bytes
// written contiguously, in rank order, to `out` on root, which must hold the sum of the lengths
// (`out` is ignored elsewhere). The building blocks of GatherConcat; one collective each.
std::vector<size_t> GatherLengths(Communicator& comm, size_t bytes, int root = 0);
void GatherInto(Communicator& comm, const void* data, size_t bytes,
                const std::vector<size_t>& lengths, void* out, int root = 0);

// The concatenation, in rank order, of every rank's values[0..count) on root (empty vector
// elsewhere); counts may differ per rank. For rows of fixed width, pass rows * width values.
template <typename T>
std::vector<T> GatherConcat(Communicator& comm, const T* values, size_t count, int root = 0) {
  static_assert(std::is_trivially_copyable_v<T>, "GatherConcat sends raw bytes");
  const std::vector<size_t> lengths = GatherLengths(comm, count * sizeof(T), root);
  size_t total = 0;
  for (size_t length : lengths) total += length;
  std::vector<T> all(total / sizeof(T));
  GatherInto(comm, values, count * sizeof(T), lengths, all.data(), root);
  return all;
}

// Returns once every rank has entered. Waits politely: after a short spin it naps between
// polls, so ranks that arrive early do not hold a core that the late ones need.
void Barrier(Communicator& comm);

}  // namespace shardflow::comm
