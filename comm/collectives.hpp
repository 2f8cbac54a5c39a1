// Thin collectives besides all-reduce: parameter broadcast and int64 agreement.
//
//   Broadcast(comm, params.data(), params.size());          // rank 0's parameters everywhere
//   int64_t steps = AllreduceInt64(comm, my_steps, Int64Op::kMin);   // agree on steps/epoch
//
// Both run under the communicator's watchdog; counts beyond MPI's int are sent in pieces.
// Thread-safety: as Communicator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.hpp"

namespace shardflow::comm {

// Copies root's data[0..count) to every rank. REQUIRES: 0 <= root < comm.size(); same count on
// every rank. Throws Error(kInvalidArgument) for a bad root.
void Broadcast(Communicator& comm, float* data, size_t count, int root = 0);

enum class ReduceOp { kSum, kMin, kMax };
using Int64Op = ReduceOp;

// In place over values[0..count).
void AllreduceInt64(Communicator& comm, int64_t* values, size_t count, Int64Op op);
// One value; returns the result.
int64_t AllreduceInt64(Communicator& comm, int64_t value, Int64Op op);

// In place over values[0..count) of doubles.
void AllreduceDoubles(Communicator& comm, double* values, size_t count, ReduceOp op);
double AllreduceDouble(Communicator& comm, double value, ReduceOp op);

}  // namespace shardflow::comm
