// Chunk/segment arithmetic of the ring and the int-sized splitting of MPI counts (no MPI).
#include "comm/ring_layout.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "comm/message_pieces.hpp"

namespace shardflow::comm {
namespace ring_layout_test {

TEST(BalancedPartTest, CoversTheRangeExactlyInOrder) {
  for (size_t count : {0, 1, 2, 7, 10, 1000, 1001}) {
    for (size_t parts : {1, 2, 3, 4, 7, 16}) {
      size_t next = 0;
      size_t lo = count, hi = 0;
      for (size_t i = 0; i < parts; ++i) {
        const ElementRange p = BalancedPart(count, parts, i);
        EXPECT_EQ(p.offset, next) << count << "/" << parts << " part " << i;
        next += p.count;
        lo = std::min(lo, p.count);
        hi = std::max(hi, p.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(hi - lo, 1u) << "parts differ by more than one element";
    }
  }
}

TEST(RingLayoutTest, SegmentsTileEveryChunk) {
  for (size_t count : {1, 7, 1000, 1048579}) {
    for (int ranks : {1, 2, 3, 4}) {
      for (size_t seg : {1, 3, 100, 1024, 1 << 20}) {
        const RingLayout layout(count, ranks, seg);
        const size_t s = layout.segments_per_chunk();
        size_t next = 0;
        for (int c = 0; c < ranks; ++c) {
          const ElementRange chunk = layout.Chunk(c);
          EXPECT_EQ(chunk.offset, next);
          for (size_t g = 0; g < s; ++g) {
            const ElementRange segment = layout.Segment(c, g);
            EXPECT_EQ(segment.offset, next) << "count " << count << " chunk " << c << " seg " << g;
            EXPECT_LE(segment.count, seg);
            EXPECT_LE(segment.count, layout.MaxSegment());
            next += segment.count;
          }
          EXPECT_EQ(next, chunk.offset + chunk.count);
        }
        EXPECT_EQ(next, count);
      }
    }
  }
}

TEST(RingLayoutTest, FewerElementsThanRanksGivesEmptyChunks) {
  const RingLayout layout(1, 4, 16);
  EXPECT_EQ(layout.segments_per_chunk(), 1u);
  EXPECT_EQ(layout.Chunk(0).count, 1u);
  EXPECT_EQ(layout.Chunk(3).count, 0u);
  EXPECT_EQ(layout.Segment(3, 0).count, 0u);
  EXPECT_EQ(RingLayout(0, 4, 16).segments_per_chunk(), 0u);
}

TEST(MessagePiecesTest, SplitsAtTheLimit) {
  EXPECT_EQ(NumMessagePieces(0, 10), 0u);
  EXPECT_EQ(NumMessagePieces(1, 10), 1u);
  EXPECT_EQ(NumMessagePieces(10, 10), 1u);
  EXPECT_EQ(NumMessagePieces(11, 10), 2u);
  const MessagePiece last = MessagePieceAt(25, 10, 2);
  EXPECT_EQ(last.offset, 20u);
  EXPECT_EQ(last.count, 5);
  // The naive twin: walk element by element.
  for (size_t count : {1, 9, 10, 11, 99, 100, 101}) {
    for (size_t limit : {1, 3, 10, 100}) {
      std::vector<int> owner(count, -1);
      for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
        const MessagePiece p = MessagePieceAt(count, limit, i);
        EXPECT_GT(p.count, 0);
        EXPECT_LE(static_cast<size_t>(p.count), limit);
        for (int k = 0; k < p.count; ++k) {
          ASSERT_EQ(owner[p.offset + k], -1);
          owner[p.offset + k] = static_cast<int>(i);
        }
      }
      for (size_t e = 0; e < count; ++e) EXPECT_EQ(owner[e], static_cast<int>(e / limit));
    }
  }
}

TEST(MessagePiecesTest, CountsBeyondIntAreNeverCast) {
  const size_t count = size_t{5} * INT_MAX + 17;  // ~10.7e9 elements
  const size_t pieces = NumMessagePieces(count, kMpiMaxCount);
  EXPECT_EQ(pieces, 6u);
  size_t total = 0;
  for (size_t i = 0; i < pieces; ++i) {
    const MessagePiece p = MessagePieceAt(count, kMpiMaxCount, i);
    EXPECT_GT(p.count, 0);
    EXPECT_EQ(p.offset, total);
    total += static_cast<size_t>(p.count);
  }
  EXPECT_EQ(total, count);
  EXPECT_EQ(MessagePieceAt(count, kMpiMaxCount, 5).count, 17);
}

}  // namespace ring_layout_test
}  // namespace shardflow::comm
