#include "apps/convert/shard_plan.hpp"

#include <cstdio>

namespace shardflow::convert {

ShardPlan::ShardPlan(int64_t records, int64_t shards, int rank, int ranks)
    : records_(records), shards_(shards) {
  // ShardRows takes an int rank/size: shard counts are far below 2^31 (checked by the caller).
  const io::RowRange mine = io::ShardRows(shards, rank, ranks);
  my_shards_ = mine;
  my_records_ = {ShardRecords(mine.begin).begin, mine.size() == 0 ? ShardRecords(mine.begin).begin
                                                                  : ShardRecords(mine.end - 1).end};
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
