#include "apps/train/straggler_log.hpp"

#include <chrono>
#include <filesystem>
#include <limits>
#include <string>

#include "comm/collectives.hpp"
#include "core/logging.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "io/pipeline/sources/format_options.hpp"

namespace shardflow::train {

StragglerReport StragglerLog::Gather(comm::Communicator& comm,
                                     const std::function<ShardSize()>& shard_size) const {
  if (comm.size() < 2) return {};
  const auto start = std::chrono::steady_clock::now();
  // The steps are equal on every rank; the smallest count guards a rank that stopped early.
  const auto steps = static_cast<size_t>(
      comm::AllreduceInt64(comm, static_cast<int64_t>(steps_.size()), comm::ReduceOp::kMin));
  const std::vector<StepArrival> all = comm::GatherConcat(comm, steps_.data(), steps);
  StragglerReport report;
  if (comm.rank() == 0) {
    std::vector<std::vector<StepArrival>> per_rank(static_cast<size_t>(comm.size()));
    for (size_t r = 0; r < per_rank.size(); ++r) {
      const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * steps);
      per_rank[r].assign(first, first + static_cast<std::ptrdiff_t>(steps));
    }
    report = AttributeStragglers(per_rank);
  }
  // Rank 0 says whether the shards are wanted (the others add 0); each rank sizes its own.
  if (shard_size &&
      comm::AllreduceInt64(comm, report.NeedsShards() ? 1 : 0, comm::ReduceOp::kMax) != 0) {
    const ShardSize mine = shard_size();
    const int64_t pair[2] = {mine.bytes, mine.records};
    const std::vector<int64_t> sizes = comm::GatherConcat(comm, pair, 2);
    for (size_t i = 0; i + 1 < sizes.size(); i += 2) {
      report.shards.push_back({.bytes = sizes[i], .records = sizes[i + 1]});
    }
    ExplainByShard(&report);
  }
  if (comm.rank() != 0) return {};
  report.gather_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

ShardSize ShardSizeOf(const pipeline::InputSpec& spec, int rank, int world) {
  namespace fs = std::filesystem;
  ShardSize size;
  // The plan of TFRecord shards (the format of sharded training data) can be had from the file
  // names and sizes; other formats' byte-range support depends on their options.
  if (spec.data.format != "tfrecord") return size;
  try {
    const std::vector<std::string> names =
        pipeline::ListFiles(pipeline::FormatFiles(spec.data.format, spec.format, spec.data.files),
                            spec.data.shuffle_files, spec.data.seed);
    std::vector<pipeline::FileInfo> files;
    bool compressed = spec.compression == "gzip" || spec.compression == "zlib";
    for (const std::string& name : names) {
      files.push_back({.name = name, .size_bytes = static_cast<uint64_t>(fs::file_size(name))});
      const auto ends = [&name](const std::string& suffix) {
        return name.size() >= suffix.size() &&
               name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      compressed = compressed || (spec.compression == "auto" && (ends(".gz") || ends(".zlib")));
    }
    // Compressed TFRecord files cannot be cut into byte ranges (tfrecord_source.hpp).
    const pipeline::ShardPlan plan = pipeline::PlanShards(
        files, !compressed, spec.data.shard_policy, world, rank, spec.data.shard_weights);
    uint64_t bytes = 0;
    for (const pipeline::ShardUnit& unit : plan.units) {
      const uint64_t file_size = files[unit.file_index].size_bytes;
      const uint64_t end = std::min(unit.range.end, file_size);
      bytes += end > unit.range.begin ? end - unit.range.begin : 0;
    }
    size.bytes = static_cast<int64_t>(bytes * static_cast<uint64_t>(plan.record_width) /
                                      static_cast<uint64_t>(plan.record_stride));
    size.records = pipeline::CountLocalRecords(spec, rank, world);
  } catch (const std::exception& e) {
    SF_LOG(Debug) << "straggler: the size of rank " << rank << "'s shard is unknown: " << e.what();
  }
  return size;
}

}  // namespace shardflow::train
