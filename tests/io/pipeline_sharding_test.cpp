// Exactly-once across simulated ranks for every shard policy, list_files, and step limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "io/pipeline/list_files.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "io/pipeline/sources/record_index.hpp"
#include "io/pipeline/step_count.hpp"
#include "pipeline_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace pipeline_sharding_test {

using testing::Drain;
using testing::RecordText;
using testing::UnevenFiles;

// All records of the source, as "f:r..." texts.
std::multiset<std::string> AllRecords(const InMemoryRecordSource& source) {
  std::multiset<std::string> all;
  for (size_t f = 0; f < source.Files().size(); ++f) {
    auto reader = source.Open(f, {});
    Element e;
    while (reader->Next(&e)) all.insert(RecordText(e));
  }
  return all;
}

// Returns each rank's record count.
std::vector<int64_t> ExpectExactlyOnce(int64_t total, int files, ShardPolicy policy, int ranks,
                                       const InterleaveOptions& reads = {},
                                       const std::vector<int64_t>& weights = {}) {
  SCOPED_TRACE(std::string(ShardPolicyName(policy)) + " total=" + std::to_string(total) +
               " files=" + std::to_string(files) + " ranks=" + std::to_string(ranks));
  auto source = UnevenFiles(total, files);
  std::multiset<std::string> seen;
  std::set<int64_t> ids;
  std::vector<int64_t> counts;
  for (int rank = 0; rank < ranks; ++rank) {
    ShardPlan plan = PlanShards(source->Files(), true, policy, ranks, rank, weights);
    counts.push_back(0);
    for (const auto& e : Drain(Dataset::FromRecordSource(source, plan, reads))) {
      seen.insert(RecordText(e));
      EXPECT_TRUE(ids.insert(e.id).second) << "duplicate id " << e.id;
      EXPECT_EQ(*e.where.file, source->Files()[e.where.file_index].name);
      ++counts.back();
    }
    EXPECT_EQ(counts.back(), CountPlannedRecords(*source, plan)) << "rank " << rank;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(total));
  EXPECT_TRUE(seen == AllRecords(*source));
  return counts;
}

// Uneven per-rank batches (a global batch that does not divide): shares follow the weights,
// every record still read once.
TEST(PipelineSharding, WeightedSharesFollowTheBatches) {
  const std::vector<int64_t> weights = {3, 3, 2};  // a global batch of 8 on 3 ranks
  for (ShardPolicy policy : {ShardPolicy::kRecord, ShardPolicy::kByteRange}) {
    const std::vector<int64_t> counts =
        ExpectExactlyOnce(8000, 5, policy, 3, /*reads=*/{}, weights);
    for (size_t r = 0; r < weights.size(); ++r) {
      // Record: exact to within one record a file; byte range: by bytes (records vary in size).
      EXPECT_NEAR(static_cast<double>(counts[r]), 1000.0 * static_cast<double>(weights[r]),
                  policy == ShardPolicy::kRecord ? 5 : 150)
          << ShardPolicyName(policy) << " rank " << r;
    }
  }
  ExpectExactlyOnce(8000, 5, ShardPolicy::kFile, 3, {}, weights);
  ExpectExactlyOnce(8000, 5, ShardPolicy::kAuto, 3, {}, weights);
  ExpectExactlyOnce(0, 2, ShardPolicy::kRecord, 3, {}, weights);
  ExpectExactlyOnce(7, 1, ShardPolicy::kRecord, 3, {}, {1, 5, 1});
  ExpectExactlyOnce(7, 3, ShardPolicy::kByteRange, 3, {}, {1, 5, 1});
  // A weight per rank, each >= 1.
  auto source = UnevenFiles(10, 2);
  EXPECT_THROW(PlanShards(source->Files(), true, ShardPolicy::kRecord, 3, 0, {1, 2}), Error);
  EXPECT_THROW(PlanShards(source->Files(), true, ShardPolicy::kRecord, 2, 0, {0, 2}), Error);
}

TEST(PipelineSharding, ExactlyOnceEveryPolicyOneToFourRanks) {
  for (ShardPolicy policy :
       {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange, ShardPolicy::kAuto}) {
    for (int ranks = 1; ranks <= 4; ++ranks) ExpectExactlyOnce(1001, 7, policy, ranks);
  }
}

TEST(PipelineSharding, ExactlyOnceAwkwardSizes) {
  for (ShardPolicy policy :
       {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange, ShardPolicy::kAuto}) {
    for (int ranks : {1, 2, 3, 4}) {
      ExpectExactlyOnce(0, 1, policy, ranks);
      ExpectExactlyOnce(1, 1, policy, ranks);
      ExpectExactlyOnce(5, 3, policy, ranks);
      ExpectExactlyOnce(1001, 1, policy, ranks);
    }
  }
}

TEST(PipelineSharding, ExactlyOnceWithParallelInterleave) {
  for (ShardPolicy policy : {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange}) {
    for (int ranks : {1, 3}) {
      ExpectExactlyOnce(1001, 7, policy, ranks,
                        {.cycle_length = 4, .block_length = 3, .num_parallel_reads = 4});
      ExpectExactlyOnce(1001, 7, policy, ranks,
                        {.cycle_length = 2, .num_parallel_reads = kAutotune});
    }
  }
}

TEST(PipelineSharding, NondeterministicInterleaveStillExactlyOnce) {
  for (int ranks : {1, 2}) {
    ExpectExactlyOnce(
        1001, 7, ShardPolicy::kFile, ranks,
        {.cycle_length = 3, .block_length = 2, .num_parallel_reads = 3, .deterministic = false});
  }
}

TEST(PipelineSharding, ByteRangeBalancesOneBigFile) {
  auto source = UnevenFiles(1001, 1);
  std::vector<size_t> counts;
  for (int rank = 0; rank < 4; ++rank) {
    ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kByteRange, 4, rank);
    counts.push_back(Drain(Dataset::FromRecordSource(source, plan)).size());
  }
  auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  EXPECT_LE(*hi - *lo, 30u);  // byte-balanced; records vary in size by ~2x
}

TEST(PipelineSharding, AutoChoosesByBalanceAndCapability) {
  std::vector<FileInfo> eight(8);
  for (auto& f : eight) f.size_bytes = 1000;
  EXPECT_EQ(PlanShards(eight, false, ShardPolicy::kAuto, 4, 0).policy, ShardPolicy::kFile);
  EXPECT_EQ(PlanShards(eight, false, ShardPolicy::kAuto, 4, 0).units.size(), 2u);
  std::vector<FileInfo> one(1);
  one[0].size_bytes = 1 << 20;
  EXPECT_EQ(PlanShards(one, true, ShardPolicy::kAuto, 2, 1).policy, ShardPolicy::kByteRange);
  EXPECT_EQ(PlanShards(one, false, ShardPolicy::kAuto, 2, 1).policy, ShardPolicy::kRecord);
  EXPECT_EQ(PlanShards(one, false, ShardPolicy::kAuto, 1, 0).policy, ShardPolicy::kFile);
  auto seven = UnevenFiles(1001, 7)->Files();  // sizes 1..7: unbalanced for 4 ranks
  const ShardPlan p = PlanShards(seven, true, ShardPolicy::kAuto, 4, 0);
  EXPECT_EQ(p.policy, ShardPolicy::kByteRange);
  EXPECT_NE(p.reason.find("unbalanced"), std::string::npos) << p.reason;
  EXPECT_THROW(PlanShards(one, false, ShardPolicy::kByteRange, 2, 0), Error);
  EXPECT_THROW(PlanShards(one, false, ShardPolicy::kFile, 2, 2), Error);
  EXPECT_THROW(ParseShardPolicy("files"), Error);
  EXPECT_EQ(ParseShardPolicy("byte_range"), ShardPolicy::kByteRange);
}

TEST(PipelineSharding, ListFilesSortsShufflesAndNamesPattern) {
  shardflow::testing::ScratchDir dir("list_files");
  for (const char* name : {"b.rec", "a.rec", "c.rec", "skip.txt"}) {
    std::ofstream(dir / name) << name;
  }
  const std::string pattern = (dir.path() / "*.rec").string();
  auto files = ListFiles(pattern);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  auto shuffled = ListFiles(pattern, true, 7);
  EXPECT_EQ(shuffled, ListFiles(pattern, true, 7));  // same seed, same order on every rank
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, files);
  try {
    ListFiles((dir.path() / "*.tfrecord").string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("*.tfrecord"), std::string::npos) << e.what();
  }
}

TEST(PipelineSharding, EqualStepCountsAcrossRanks) {
  auto source = UnevenFiles(1001, 7);
  const int ranks = 4;
  const int64_t batch = 32;
  std::vector<int64_t> local;
  std::vector<Dataset> per_rank;
  for (int rank = 0; rank < ranks; ++rank) {
    ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kRecord, ranks, rank);
    per_rank.push_back(Dataset::FromRecordSource(source, plan).PaddedBatch(batch, false));
    local.push_back(LocalBatchCount(per_rank.back()));
  }
  const int64_t agreed = *std::min_element(local.begin(), local.end());  // the caller's MIN
  int64_t total_elements = 0, left_out = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    auto report = std::make_shared<StepLimitReport>();
    auto out = Drain(LimitSteps(per_rank[rank], agreed, report).Repeat(2));
    EXPECT_EQ(static_cast<int64_t>(out.size()), 2 * agreed);
    EXPECT_EQ(report->steps.load(), 2 * agreed);
    for (size_t i = 0; i < out.size() / 2; ++i) total_elements += out[i].Get("bytes").dim(0);
    left_out += report->elements_left_out.load();
  }
  // Per epoch (half the reports): what was taken plus what was left out is every record.
  EXPECT_EQ(total_elements + left_out / 2, 1001);
  EXPECT_THROW(LocalBatchCount(per_rank[0].Repeat()), Error);
}

}  // namespace pipeline_sharding_test
}  // namespace shardflow::pipeline

namespace shardflow::pipeline {
namespace pipeline_sharding_test {

TEST(PipelineSharding, PatternInAMissingFolderMatchesNothing) {
  try {
    ListFiles("/nonexistent-shardflow-folder/part-*.tfrecord", false, 0);
    FAIL() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("no files match"), std::string::npos) << e.what();
  }
}

}  // namespace pipeline_sharding_test
}  // namespace shardflow::pipeline
