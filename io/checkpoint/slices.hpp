// Slices of the parameter arena owned by the ranks of a collective checkpoint: the check that
// they cover the arena exactly once, and the arena CRC assembled from per-slice CRCs.
//
// A slice is [offset, offset + size) in arena elements. The same ranges apply to every
// optimizer slot (each slot is a flat array the size of the arena). A rank may own several
// slices, or none.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardflow {

struct ArenaSlice {
  int64_t offset = 0;  // first arena element
  int64_t size = 0;    // elements; 0 is an empty slice (allowed, ignored)
};

// One rank's slice with the CRC-32 (zlib) of its float bytes.
struct SliceCrc {
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc = 0;
};

// Ok when the non-empty slices of all ranks (`by_rank[r]` are rank r's) cover [0, arena_size)
// exactly once. Otherwise Error(kInvalidArgument) naming the first problem in offset order:
// a negative offset or size, a slice past the end of the arena, a gap (the elements no rank
// owns), or an overlap (both ranks and both slices).
Status CheckArenaCoverage(const std::vector<std::vector<ArenaSlice>>& by_rank, int64_t arena_size);

// The CRC-32 of the whole arena's bytes from the CRCs of slices that cover it exactly once (in
// any order): zlib's crc32_combine in offset order. Equal to the CRC of the arena in one pass.
uint32_t CombineSliceCrcs(std::vector<SliceCrc> slices);

// The CRC-32 of `bytes` bytes (any length; zlib's CRC-32 as in the checkpoint's params_crc32).
uint32_t Crc32(const void* data, size_t bytes);

// "[begin,end)", as the checkpoint errors name ranges of elements and layers.
std::string HalfOpenRange(int64_t begin, int64_t end);

}  // namespace shardflow
