// Ring all-reduce: reduce-scatter, then all-gather, chunked and pipelined.
//
// Words (ring_layout.hpp):
//   chunk   - the buffer is cut into n chunks, n = number of ranks; chunk c ends up fully
//             reduced on rank c - 1 (mod n) after the reduce-scatter.
//   segment - each chunk is cut into S segments of at most segment_bytes; a segment is what one
//             message carries and what one reduction step adds.
//   unit    - (step, segment): unit u = step * S + segment, u in [0, (n - 1) * S) per phase.
//
// Rank r sends to its right neighbour r + 1 and receives from its left neighbour r - 1.
//   Reduce-scatter, step s = 0..n-2: send chunk (r - s) and receive chunk (r - s - 1), adding
//     the received segment into the local copy. After step n-2, rank r holds the sum of chunk
//     (r + 1) over all ranks.
//   All-gather, step s = 0..n-2: send chunk (r + 1 - s), receive chunk (r - s) straight into
//     the buffer. Afterwards every rank holds every reduced chunk.
// Each rank sends and receives 2 (n - 1) / n of the buffer: bandwidth-optimal.
//
// Pipelining: the receive for unit u + 1 is posted into the second staging slot before unit u
// is reduced, so with two segments in flight the transfer of the next segment overlaps the
// reduction of this one; a send is posted as soon as its segment is final (unit u - S has been
// reduced). In the all-gather the float32 receives land directly in the destination buffer (no
// staging copy); sends always read the buffer in place. With a 16-bit wire format segments are
// packed into two send slots and widened on receipt; the owner rounds its reduced chunk
// through the wire format before the all-gather so every rank ends with identical bits.
// How much the overlap buys depends on who moves the bytes: over a network the NIC does, so
// small segments pay off; on shared memory (vader + CMA) the receiving rank copies each segment
// itself, so smaller segments only add messages, and the default segment is large (4 MiB,
// kDefaultSegmentBytes; measured: docs/design.md decision 14).
//
// Cost: 2 (n - 1) S messages per rank; staging memory 2 segments (+2 for 16-bit wire) from
// the communicator's scratch.
#pragma once

#include <cstddef>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// Sum in place. Called through Allreduce (which applies the mode and the watchdog).
void AllreduceRing(Communicator& comm, float* data, size_t count, const AllreduceOptions& options);

}  // namespace shardflow::comm
