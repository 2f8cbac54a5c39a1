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

// Bytes per rank under round-robin file assignment, per unit of weight: max and min.
std::pair<uint64_t, uint64_t> FileBalance(const std::vector<FileInfo>& files, int num_ranks,
                                          const std::vector<int64_t>& weights) {
  std::vector<uint64_t> per_rank(num_ranks, 0);
  for (size_t i = 0; i < files.size(); ++i) per_rank[i % num_ranks] += files[i].size_bytes;
  if (!weights.empty()) {
    for (int r = 0; r < num_ranks; ++r) per_rank[r] /= static_cast<uint64_t>(weights[r]);
  }
  auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
  return {*hi, *lo};
}

// Checks `weights` (empty, or one >= 1 per rank) and returns their sum and rank's running sum
// before it ({P, rank} without weights).
std::pair<uint64_t, uint64_t> WeightSpan(const std::vector<int64_t>& weights, int num_ranks,
                                         int rank) {
  if (weights.empty()) return {static_cast<uint64_t>(num_ranks), static_cast<uint64_t>(rank)};
  if (weights.size() != static_cast<size_t>(num_ranks) ||
      *std::min_element(weights.begin(), weights.end()) < 1) {
    throw Error(ErrorCode::kInvalidArgument, "shard weights need one weight >= 1 for each of " +
                                                 std::to_string(num_ranks) + " ranks (got " +
                                                 std::to_string(weights.size()) + ")");
  }
  uint64_t total = 0, before = 0;
  for (int r = 0; r < num_ranks; ++r) {
    if (r == rank) before = total;
    total += static_cast<uint64_t>(weights[r]);
  }
  return {total, before};
}

}  // namespace

ShardPlan PlanShards(const std::vector<FileInfo>& files, bool supports_byte_ranges,
                     ShardPolicy policy, int num_ranks, int rank,
                     const std::vector<int64_t>& weights) {
  if (num_ranks < 1 || rank < 0 || rank >= num_ranks) {
    throw Error(ErrorCode::kInvalidArgument, "invalid rank " + std::to_string(rank) + " of " +
                                                 std::to_string(num_ranks) + " for sharding");
  }
  const auto [total_weight, weight_before] = WeightSpan(weights, num_ranks, rank);
  const uint64_t weight = weights.empty() ? 1 : static_cast<uint64_t>(weights[rank]);
  ShardPlan plan;
  if (policy == ShardPolicy::kAuto) {
    auto [hi, lo] = FileBalance(files, num_ranks, weights);
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
      plan.record_stride = static_cast<int>(total_weight);
      plan.record_offset = static_cast<int>(weight_before);
      plan.record_width = static_cast<int>(weight);
      break;
    case ShardPolicy::kByteRange:
      if (!supports_byte_ranges) {
        throw Error(ErrorCode::kInvalidArgument,
                    "shard_policy = byte_range needs a format that can split files by bytes",
                    {.key = "shard_policy", .hint = "use record or file"});
      }
      for (size_t i = 0; i < files.size(); ++i) {
        // Range r = [size*W_r/W, size*W_{r+1}/W) (W_r: the weights before rank r, r without
        // weights; W their sum); the last range is open-ended so records past a stale size are
        // still read by someone.
        const uint64_t size = files[i].size_bytes;
        const uint64_t p = total_weight;
        // floor(size * w / p) without overflowing 64 bits.
        auto cut = [&](uint64_t w) { return size / p * w + size % p * w / p; };
        ByteRange range;
        range.begin = cut(weight_before);
        if (rank + 1 < num_ranks) range.end = cut(weight_before + weight);
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
                "reading a list of records needs a format with byte ranges (uncompressed "
                "tfrecord, csv, jsonl or text files; hdf5), not " +
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
