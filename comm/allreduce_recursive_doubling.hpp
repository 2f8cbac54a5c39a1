// Recursive-doubling all-reduce for small messages: log2(p) exchange steps of the whole buffer.
//
// With n ranks let p be the largest power of two <= n and rem = n - p.
//   1. Fold: among the first 2 * rem ranks, each even rank sends its buffer to the odd rank
//      above it, which adds it; the even ranks then sit out. The p remaining ranks get new
//      ranks 0..p-1 (odd rank r -> r / 2, rank r >= 2 rem -> r - rem).
//   2. Exchange: for mask = 1, 2, 4, ... < p, new rank q swaps its whole buffer with q ^ mask
//      and adds what it receives. Both partners add the same two operands (a + b == b + a
//      exactly), so all p ranks hold identical bits.
//   3. Unfold: each odd rank of the first 2 * rem sends the result back to its even partner.
// Cost: floor(log2 n) + 2 message latencies (n not a power of two), count * log2(p) additions.
#pragma once

#include <cstddef>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// Sum in place. Always sends float32 (options.wire is ignored).
void AllreduceRecursiveDoubling(Communicator& comm, float* data, size_t count,
                                const AllreduceOptions& options);

}  // namespace shardflow::comm
