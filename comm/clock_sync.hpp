// Clock offsets between ranks, measured by ping-pong against rank 0, for one timeline of a run
// (core/trace.hpp MergeTraceFiles; `shardflow-trace merge`).
//
// Rank r > 0 sends rank 0 a ping at t1 (its monotonic clock), rank 0 answers with its own
// clock T, and r reads the answer at t2: rank 0's clock at r's time (t1 + t2) / 2 is T, within
// half the round trip. Of `rounds` round trips the shortest is kept (the least queueing).
// Measured at the start and at the end of a run, two samples let a merge correct the drift
// between the clocks (linear between them). On one node every rank shares the monotonic clock
// and the offsets come out as 0 within the error.
// Thread-safety: collective over the communicator (one thread of each rank at a time).
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"

namespace shardflow::comm {

struct ClockSample {
  int64_t local_ns = 0;   // this rank's MonotonicNanos() at the sample
  int64_t offset_ns = 0;  // rank 0's clock minus this rank's at local_ns
  int64_t error_ns = 0;   // bound on |offset error|: half the shortest round trip
};

// Collective over `comm`. Rank 0 returns offset 0, error 0.
ClockSample MeasureClockOffset(const Communicator& comm, int rounds = 32);

}  // namespace shardflow::comm
