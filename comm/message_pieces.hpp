// Splitting of element counts for MPI, whose count arguments are `int`.
//
// A message of `count` elements (size_t) is sent as ceil(count / limit) pieces of at most `limit`
// elements each, in order, with the same tag; MPI's non-overtaking rule for one (source, tag,
// communicator) makes the receiver's pieces match the sender's. A count is never cast to int
// unchecked: every piece is at most `limit` <= INT_MAX. Communicator uses these with
// limit = kMpiMaxCount; tests use a small artificial limit to exercise the splitting.
#pragma once

#include <climits>
#include <cstddef>

namespace shardflow::comm {

inline constexpr size_t kMpiMaxCount = static_cast<size_t>(INT_MAX);

// One piece of a split message: elements [offset, offset + count).
struct MessagePiece {
  size_t offset = 0;
  int count = 0;
};

// Number of pieces for `count` elements (0 for count == 0). REQUIRES: 0 < limit <= kMpiMaxCount.
constexpr size_t NumMessagePieces(size_t count, size_t limit) {
  return count / limit + (count % limit != 0 ? 1 : 0);
}

// Piece `index` of `count` elements split into pieces of at most `limit`: every piece but the
// last has exactly `limit` elements. REQUIRES: index < NumMessagePieces(count, limit).
constexpr MessagePiece MessagePieceAt(size_t count, size_t limit, size_t index) {
  const size_t offset = index * limit;
  const size_t left = count - offset;
  return {offset, static_cast<int>(left < limit ? left : limit)};
}

}  // namespace shardflow::comm
