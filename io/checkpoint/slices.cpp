#include "io/checkpoint/slices.hpp"

#include <zlib.h>

#include <algorithm>
#include <string>
#include <tuple>

namespace shardflow {
namespace {

struct Owned {
  int64_t offset;
  int64_t end;
  int rank;
};

}  // namespace

Status CheckArenaCoverage(const std::vector<std::vector<ArenaSlice>>& by_rank, int64_t arena_size) {
  const ErrorContext ctx{.hint = "the ranks' slices must cover the arena exactly once"};
  std::vector<Owned> owned;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    for (const ArenaSlice& s : by_rank[r]) {
      const std::string who = "rank " + std::to_string(r) + "'s slice at offset " +
                              std::to_string(s.offset) + " of size " + std::to_string(s.size);
      if (s.offset < 0 || s.size < 0) {
        return Status(ErrorCode::kInvalidArgument, who + " is negative", ctx);
      }
      if (s.size == 0) continue;
      if (s.offset > arena_size || s.size > arena_size - s.offset) {
        return Status(ErrorCode::kInvalidArgument,
                      who + " runs past the arena of " + std::to_string(arena_size) + " elements",
                      ctx);
      }
      owned.push_back({s.offset, s.offset + s.size, static_cast<int>(r)});
    }
  }
  std::sort(owned.begin(), owned.end(), [](const Owned& a, const Owned& b) {
    return std::tie(a.offset, a.end, a.rank) < std::tie(b.offset, b.end, b.rank);
  });
  int64_t covered = 0;
  const Owned* previous = nullptr;
  for (const Owned& o : owned) {
    if (o.offset > covered) {
      return Status(ErrorCode::kInvalidArgument,
                    "no rank owns arena elements " + HalfOpenRange(covered, o.offset) +
                        " (gap before rank " + std::to_string(o.rank) + "'s slice " +
                        HalfOpenRange(o.offset, o.end) + ")",
                    ctx);
    }
    if (o.offset < covered) {
      return Status(ErrorCode::kInvalidArgument,
                    "rank " + std::to_string(o.rank) + "'s slice " +
                        HalfOpenRange(o.offset, o.end) + " overlaps rank " +
                        std::to_string(previous->rank) + "'s slice " +
                        HalfOpenRange(previous->offset, previous->end),
                    ctx);
    }
    covered = o.end;
    previous = &o;
  }
  if (covered < arena_size) {
    return Status(ErrorCode::kInvalidArgument,
                  "no rank owns arena elements " + HalfOpenRange(covered, arena_size) +
                      " (the arena has " + std::to_string(arena_size) + " elements)",
                  ctx);
  }
  return Status::Ok();
}

uint32_t CombineSliceCrcs(std::vector<SliceCrc> slices) {
  std::sort(slices.begin(), slices.end(),
            [](const SliceCrc& a, const SliceCrc& b) { return a.offset < b.offset; });
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const SliceCrc& s : slices) {
    if (s.size == 0) continue;
    crc = crc32_combine(crc, s.crc, static_cast<z_off_t>(s.size * int64_t{sizeof(float)}));
  }
  return static_cast<uint32_t>(crc);
}

uint32_t Crc32(const void* data, size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string HalfOpenRange(int64_t begin, int64_t end) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(...).
  std::string s(1, '[');
  s += std::to_string(begin);
  s += ',';
  s += std::to_string(end);
  s += ')';
  return s;
}

}  // namespace shardflow
