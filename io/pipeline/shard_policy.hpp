// Shard policies: how the ranks of a job split a set of files so that every record is read by
// exactly one rank per epoch (docs/design.md decision 6).
//
//  file        rank r reads whole files r, r+P, r+2P, ... (P ranks). Cheapest (no wasted
//              reads) but balanced only when there are many files of similar size.
//  record      every rank reads every file and keeps record k of file f when
//              (k + f) mod P == r. Always balanced to within one record per file; costs P
//              times the reading (each rank reads all bytes).
//  byte_range  every file is cut into P byte ranges; rank r reads the records that start in
//              range r of each file. Balanced by bytes, no wasted reads; needs a format that
//              can find record boundaries (RecordSource::SupportsByteRanges).
//  auto        file when every rank gets at least one file and the heaviest rank's bytes are
//              within 25% of the lightest's; otherwise byte_range when the format supports it,
//              otherwise record. The chosen policy and the reason are returned for logging.
// Weights (uneven per-rank batches: a global batch that does not divide over the ranks): rank r
// of weight w_r takes a share w_r / sum(w) — record keeps (k + f) mod sum(w) in
// [w_0 + .. + w_{r-1}, + w_r), byte_range cuts each file at the weights' running sums, auto
// compares bytes per weight; file deals whole files round-robin as without weights. Without
// weights the plan is the unweighted one above (equal weights give another record order: pass
// none for equal batches).
// Ranks come in as plain ints: io never includes comm.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/pipeline/record_source.hpp"

namespace shardflow::pipeline {

enum class ShardPolicy { kFile, kRecord, kByteRange, kAuto };

// "file" | "record" | "byte_range" | "auto"; throws Error(kInvalidArgument) naming the key.
ShardPolicy ParseShardPolicy(const std::string& text);
const char* ShardPolicyName(ShardPolicy policy);

// One piece of work: the records of a file that start in `range`.
struct ShardUnit {
  size_t file_index = 0;
  ByteRange range;
};

// The record policy's rule: record k of file f belongs to the rank whose window
// [offset, offset + width) holds (k + f) mod stride.
inline bool InRecordWindow(int64_t k, size_t file, int stride, int offset, int width) {
  const int64_t slot = (k + static_cast<int64_t>(file)) % stride - offset;
  return slot >= 0 && slot < width;
}

struct ShardPlan {
  ShardPolicy policy = ShardPolicy::kFile;  // resolved (never kAuto)
  std::vector<ShardUnit> units;             // this rank's units, in file order
  // When set, the units come from this function instead, one at a time until it returns
  // nullopt (dynamic sharding: RecordProviderPlan). Called on the pipeline's thread.
  std::function<std::optional<ShardUnit>()> next_unit;
  int record_stride = 1;  // record policy: keep (k + f) % stride in [offset, offset + width)
  int record_offset = 0;
  int record_width = 1;
  // Whether the record policy keeps record k of file `file` (always true for the others).
  bool KeepsRecord(int64_t k, size_t file) const {
    if (policy != ShardPolicy::kRecord || record_stride <= 1) return true;
    return InRecordWindow(k, file, record_stride, record_offset, record_width);
  }
  std::string reason;  // why this policy (auto) — for the log
};

// REQUIRES: 0 <= rank < num_ranks; `weights` empty or one >= 1 per rank. Throws
// Error(kInvalidArgument) for bad ranks or weights, or for byte_range on a source without
// byte-range support.
ShardPlan PlanShards(const std::vector<FileInfo>& files, bool supports_byte_ranges,
                     ShardPolicy policy, int num_ranks, int rank,
                     const std::vector<int64_t>& weights = {});

// A plan that reads exactly the records `ids` names (element ids, MakeElementId(file, offset)),
// in that order: one unit per record, the byte range [offset, offset + 1) of its file (the
// record that starts there). Throws Error(kInvalidArgument) when the source has no byte ranges
// and Error(kInternal) for an id outside the source's files.
ShardPlan RecordListPlan(const RecordSource& source, const std::vector<int64_t>& ids);

// A plan whose units are the records `next_id` hands out (element ids, as for RecordListPlan),
// one record a unit, until it returns nullopt. Same errors as RecordListPlan (the id check
// when the unit is asked for).
ShardPlan RecordProviderPlan(const RecordSource& source,
                             std::function<std::optional<int64_t>()> next_id);

}  // namespace shardflow::pipeline
