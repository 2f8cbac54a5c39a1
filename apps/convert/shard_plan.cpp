#include "apps/convert/shard_plan.hpp"

#include <cstdio>
#include <utility>

#include "core/error.hpp"

namespace shardflow::convert {

ShardPlan::ShardPlan(int64_t records, int64_t shards, int rank, int ranks)
    : records_(records), shards_(shards) {
  // ShardRows takes an int rank/size: shard counts are far below 2^31 (checked by the caller).
  const io::RowRange mine = io::ShardRows(shards, rank, ranks);
  my_shards_ = mine;
  my_records_ = {ShardRecords(mine.begin).begin, mine.size() == 0 ? ShardRecords(mine.begin).begin
                                                                  : ShardRecords(mine.end - 1).end};
}

RecordCursor::RecordCursor(std::vector<int64_t> first, int64_t start, Opener open)
    : first_(std::move(first)), open_(std::move(open)), start_(start) {
  const size_t units = first_.size() - 1;
  while (unit_ < units && first_[unit_ + 1] <= start_) ++unit_;
  id_ = unit_ < units ? first_[unit_] : 0;
}

void RecordCursor::Next(pipeline::Element* e) {
  for (;;) {
    if (unit_ + 1 >= first_.size()) {
      throw Error(ErrorCode::kInternal, "input ended before record " + std::to_string(id_),
                  {.hint = "did an input file change during the conversion?"});
    }
    if (!reader_) reader_ = open_(unit_);
    if (reader_->Next(e)) {
      e->where.file_index = static_cast<int64_t>(unit_);
      if (id_++ >= start_) return;
      continue;
    }
    reader_.reset();
    ++unit_;
  }
}

io::RowRange ShardPlan::ShardRecords(int64_t shard) const {
  if (shard >= shards_) return {records_, records_};
  return io::ShardRows(records_, static_cast<int>(shard), static_cast<int>(shards_));
}

std::string ShardFileName(const std::string& prefix, int64_t shard, int64_t shards,
                          const std::string& compression) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%05lld-of-%05lld.tfrecord", static_cast<long long>(shard),
                static_cast<long long>(shards));
  std::string name = prefix + buf;
  if (compression == "gzip") name += ".gz";
  if (compression == "zlib") name += ".zlib";
  return name;
}

}  // namespace shardflow::convert
