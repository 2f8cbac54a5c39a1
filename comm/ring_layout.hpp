// How a ring all-reduce cuts a buffer: chunks and segments (see allreduce_ring.hpp for the
// algorithm that uses them). Pure arithmetic, unit-tested without MPI.
//
//   chunk:   the buffer of `count` elements is cut into `ranks` contiguous chunks of nearly equal
//            size (the first count % ranks chunks have one element more). After the
//            reduce-scatter phase rank r owns the fully reduced chunk (r + 1) % ranks.
//   segment: every chunk is cut into the same number of segments, `segments_per_chunk`, again
//            nearly equal, each at most `segment_elements` long (segments of a short chunk may
//            be empty). A segment is the unit of transfer and of reduction: while one segment is
//            being reduced the next is already on the wire.
#pragma once

#include <cstddef>

namespace shardflow::comm {

// Elements [offset, offset + count).
struct ElementRange {
  size_t offset = 0;
  size_t count = 0;
};

// Part `index` of `count` elements cut into `parts` nearly equal contiguous parts.
// REQUIRES: parts > 0, index < parts.
constexpr ElementRange BalancedPart(size_t count, size_t parts, size_t index) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  const size_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

class RingLayout {
 public:
  // REQUIRES: ranks > 0, segment_elements > 0.
  constexpr RingLayout(size_t count, int ranks, size_t segment_elements)
      : count_(count), ranks_(static_cast<size_t>(ranks)) {
    const size_t largest_chunk = BalancedPart(count, ranks_, 0).count;
    segments_per_chunk_ =
        largest_chunk == 0 ? 0 : (largest_chunk + segment_elements - 1) / segment_elements;
  }

  size_t count() const { return count_; }
  size_t segments_per_chunk() const { return segments_per_chunk_; }

  // REQUIRES: 0 <= chunk < ranks.
  constexpr ElementRange Chunk(size_t chunk) const { return BalancedPart(count_, ranks_, chunk); }

  // Segment `segment` of chunk `chunk`, offset relative to the whole buffer.
  // REQUIRES: segment < segments_per_chunk().
  constexpr ElementRange Segment(size_t chunk, size_t segment) const {
    const ElementRange c = Chunk(chunk);
    ElementRange s = BalancedPart(c.count, segments_per_chunk_, segment);
    s.offset += c.offset;
    return s;
  }

  // The largest segment of any chunk (staging buffers are this long).
  constexpr size_t MaxSegment() const {
    return segments_per_chunk_ == 0 ? 0
                                    : BalancedPart(Chunk(0).count, segments_per_chunk_, 0).count;
  }

 private:
  size_t count_;
  size_t ranks_;
  size_t segments_per_chunk_ = 0;
};

}  // namespace shardflow::comm
