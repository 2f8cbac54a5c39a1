// RecordIndex: record offsets of a source's files, for counting records per shard without
// reading them (CountLocalBatches in input_pipeline.hpp).
//
// A source that can list where its records start cheaply (TFRecord: a scan of the 12-byte
// headers; row formats: row k at k * row_bytes) implements this next to RecordSource. The
// offsets are the ones its reader reports in Element::where.offset, ascending; a reader over
// ByteRange [b, e) yields exactly the records whose offset lies in [b, e).
// Thread-safety: RecordOffsets may be called from several threads.
#pragma once

#include <cstdint>
#include <vector>

#include "io/pipeline/record_source.hpp"
#include "io/pipeline/shard_policy.hpp"

namespace shardflow::pipeline {

class RecordIndex {
 public:
  virtual ~RecordIndex() = default;
  // Offsets of every record of file `file_index`, ascending. Throws like the reader would
  // (kNotFound, kIo, kDataLoss naming the file).
  virtual std::vector<uint64_t> RecordOffsets(size_t file_index) const = 0;
};

// Records this rank reads under `plan` (one pass): by `index` when the source has one, or by
// the offsets PlanSourceShards found, else by reading the plan's units through the source.
int64_t CountPlannedRecords(const RecordSource& source, const ShardPlan& plan);

// PlanShards (shard_policy.hpp) for `source`, with byte ranges cut at record boundaries by
// record count: when the plan is byte_range over several ranks, the files are read as one
// sequence of N records (offsets from the source's RecordIndex, else one read of every file,
// remembered per process by file name, size and mtime) and rank r of weight w_r takes records
// [N*W_r/W, N*(W_r+w_r)/W) as units of one or more files — shares that differ by at most one
// record (equal bytes gave rows of uneven length shares 30% apart, left out by the equal step
// count). The last rank's last range stays open-ended. Other policies: PlanShards as it is.
// Throws what reading the files throws (naming file and record).
ShardPlan PlanSourceShards(const RecordSource& source, ShardPolicy policy, int num_ranks, int rank,
                           const std::vector<int64_t>& weights = {});

}  // namespace shardflow::pipeline
