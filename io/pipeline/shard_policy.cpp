#include "io/pipeline/shard_policy.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace shardflow::pipeline {

ShardPolicy ParseShardPolicy(const std::string& text) {
  if (text == "file") return ShardPolicy::kFile;
  if (text == "record") return ShardPolicy::kRecord;
  if (text == "byte_range") return ShardPolicy::kByteRange;
  if (text == "auto") return ShardPolicy::kAuto;
  throw Error(ErrorCode::kInvalidArgument, "unknown shard policy '" + text + "'",
              {.key = "shard_policy", .hint = "use file | record | byte_range | auto"});
}

const char* ShardPolicyName(ShardPolicy policy) {
  switch (policy) {
    case ShardPolicy::kFile:
      return "file";
    case ShardPolicy::kRecord:
      return "record";
    case ShardPolicy::kByteRange:
      return "byte_range";
    case ShardPolicy::kAuto:
      return "auto";
  }
  return "?";
}

namespace {

// Bytes per rank under round-robin file assignment: max and min.
std::pair<uint64_t, uint64_t> FileBalance(const std::vector<FileInfo>& files, int num_ranks) {
  std::vector<uint64_t> per_rank(num_ranks, 0);
  for (size_t i = 0; i < files.size(); ++i) per_rank[i % num_ranks] += files[i].size_bytes;
  auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
  return {*hi, *lo};
}

}  // namespace

ShardPlan PlanShards(const std::vector<FileInfo>& files, bool supports_byte_ranges,
                     ShardPolicy policy, int num_ranks, int rank) {
  if (num_ranks < 1 || rank < 0 || rank >= num_ranks) {
    throw Error(ErrorCode::kInvalidArgument, "invalid rank " + std::to_string(rank) + " of " +
                                                 std::to_string(num_ranks) + " for sharding");
  }
  ShardPlan plan;
  if (policy == ShardPolicy::kAuto) {
    auto [hi, lo] = FileBalance(files, num_ranks);
    if (num_ranks == 1) {
      plan.policy = ShardPolicy::kFile;
      plan.reason = "one rank: reads every file";
    } else if (files.size() >= static_cast<size_t>(num_ranks) && hi <= lo + lo / 4) {
      plan.policy = ShardPolicy::kFile;
      plan.reason = std::to_string(files.size()) + " files over " + std::to_string(num_ranks) +
                    " ranks balance within 25% by bytes";
    } else if (supports_byte_ranges) {
      plan.policy = ShardPolicy::kByteRange;
      plan.reason = std::to_string(files.size()) + " files over " + std::to_string(num_ranks) +
                    " ranks would be unbalanced (" + std::to_string(hi) + " vs " +
                    std::to_string(lo) + " bytes); the format splits by bytes";
    } else {
      plan.policy = ShardPolicy::kRecord;
      plan.reason = std::to_string(files.size()) + " files over " + std::to_string(num_ranks) +
                    " ranks would be unbalanced and the format cannot split by bytes";
    }
  } else {
    plan.policy = policy;
    plan.reason = "requested";
  }
  switch (plan.policy) {
    case ShardPolicy::kFile:
      for (size_t i = rank; i < files.size(); i += num_ranks) plan.units.push_back({i, {}});
      break;
    case ShardPolicy::kRecord:
      for (size_t i = 0; i < files.size(); ++i) plan.units.push_back({i, {}});
      plan.record_stride = num_ranks;
      plan.record_offset = rank;
      break;
    case ShardPolicy::kByteRange:
      if (!supports_byte_ranges) {
        throw Error(ErrorCode::kInvalidArgument,
                    "shard_policy = byte_range needs a format that can split files by bytes",
                    {.key = "shard_policy", .hint = "use record or file"});
      }
      for (size_t i = 0; i < files.size(); ++i) {
        // Range r = [size*r/P, size*(r+1)/P); the last range is open-ended so records past
        // a stale size are still read by someone.
        const uint64_t size = files[i].size_bytes;
        const uint64_t p = static_cast<uint64_t>(num_ranks);
        // floor(size * r / p) without overflowing 64 bits.
        auto cut = [&](uint64_t r) { return size / p * r + size % p * r / p; };
        ByteRange range;
        range.begin = cut(rank);
        if (rank + 1 < num_ranks) range.end = cut(rank + 1);
        plan.units.push_back({i, range});
      }
      break;
    case ShardPolicy::kAuto:
      break;
  }
  return plan;
}

namespace {

void NeedByteRanges(const RecordSource& source) {
  if (!source.SupportsByteRanges()) {
    throw Error(ErrorCode::kInvalidArgument,
                "reading a list of records needs a format with byte ranges (tfrecord), not " +
                    source.FormatDescription());
  }
}

ShardUnit UnitOfId(int64_t id, size_t num_files) {
  const int64_t file = id >> 40;
  const uint64_t offset = static_cast<uint64_t>(id) & ((uint64_t{1} << 40) - 1);
  if (id < 0 || file >= static_cast<int64_t>(num_files)) {
    throw Error(ErrorCode::kInternal, "record id " + std::to_string(id) + " names file " +
                                          std::to_string(file) + " of " +
                                          std::to_string(num_files));
  }
  return {.file_index = static_cast<size_t>(file), .range = {offset, offset + 1}};
}

}  // namespace

ShardPlan RecordListPlan(const RecordSource& source, const std::vector<int64_t>& ids) {
  NeedByteRanges(source);
  ShardPlan plan;
  plan.policy = ShardPolicy::kByteRange;
  plan.reason = "a list of " + std::to_string(ids.size()) + " records";
  plan.units.reserve(ids.size());
  const size_t files = source.Files().size();
  for (const int64_t id : ids) plan.units.push_back(UnitOfId(id, files));
  return plan;
}

ShardPlan RecordProviderPlan(const RecordSource& source,
                             std::function<std::optional<int64_t>()> next_id) {
  NeedByteRanges(source);
  ShardPlan plan;
  plan.policy = ShardPolicy::kByteRange;
  plan.reason = "records claimed as they are needed (dynamic sharding)";
  const size_t files = source.Files().size();
  plan.next_unit = [next_id = std::move(next_id), files]() -> std::optional<ShardUnit> {
    const std::optional<int64_t> id = next_id();
    if (!id) return std::nullopt;
    return UnitOfId(*id, files);
  };
  return plan;
}

}  // namespace shardflow::pipeline
