// PlanSourceShards (io/pipeline/sources/record_index.hpp): byte ranges cut at records by count,
// so files whose lines differ in length still give every rank an equal share of the records,
// each record to exactly one rank.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/record_index.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline::shard_rows_test {

// Lines "f:i" (file f, line i), the first `long_lines` of each file 50 times longer.
std::vector<std::string> WriteFiles(const ::shardflow::testing::ScratchDir& dir,
                                    const std::vector<int>& lines, int long_lines) {
  std::vector<std::string> files;
  for (size_t f = 0; f < lines.size(); ++f) {
    files.push_back((dir / ("lines" + std::to_string(f) + ".txt")).string());
    std::ofstream out(files.back());
    for (int i = 0; i < lines[f]; ++i) {
      out << f << ':' << i << (i < long_lines ? std::string(200, 'x') : "") << '\n';
    }
  }
  return files;
}

// Every rank's records under its plan, as "f:i" keys (the line's text before any padding).
std::vector<std::vector<std::string>> ReadByRank(const RecordSource& source, int ranks,
                                                 const std::vector<int64_t>& weights = {}) {
  std::vector<std::vector<std::string>> got(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const ShardPlan plan = PlanSourceShards(source, ShardPolicy::kAuto, ranks, r, weights);
    EXPECT_EQ(plan.policy, ShardPolicy::kByteRange);
    for (const ShardUnit& unit : plan.units) {
      auto reader = source.Open(unit.file_index, unit.range);
      Element e;
      while (reader->Next(&e)) {
        const Tensor& t = e.features.front().second;
        const std::string line(static_cast<const char*>(t.raw_data()), t.byte_size());
        got[static_cast<size_t>(r)].push_back(line.substr(0, line.find('x')));
      }
    }
    EXPECT_EQ(CountPlannedRecords(source, plan),
              static_cast<int64_t>(got[static_cast<size_t>(r)].size()));
  }
  return got;
}

void ExpectEachOnce(const std::vector<std::vector<std::string>>& got, int total) {
  std::map<std::string, int> seen;
  for (const auto& rank : got) {
    for (const std::string& k : rank) ++seen[k];
  }
  EXPECT_EQ(static_cast<int>(seen.size()), total);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
}

TEST(ShardRows, UnevenLinesSplitEquallyByCountOverOneFile) {
  const ::shardflow::testing::ScratchDir dir("shard_rows_one");
  const auto source = OpenRecordSource("text", WriteFiles(dir, {301}, 90), {});
  ASSERT_TRUE(source->SupportsByteRanges());
  const auto got = ReadByRank(*source, 3);
  ExpectEachOnce(got, 301);
  for (const auto& rank : got) {
    EXPECT_GE(rank.size(), 100u);
    EXPECT_LE(rank.size(), 101u);
  }
}

TEST(ShardRows, SeveralFilesAndWeightsGiveSharesByCount) {
  const ::shardflow::testing::ScratchDir dir("shard_rows_many");
  // 2 files for 4 ranks: auto takes byte ranges; a rank's share spans a file boundary.
  const auto source = OpenRecordSource("text", WriteFiles(dir, {70, 130}, 30), {});
  const auto even = ReadByRank(*source, 4);
  ExpectEachOnce(even, 200);
  for (const auto& rank : even) EXPECT_EQ(rank.size(), 50u);
  const auto weighted = ReadByRank(*source, 4, {1, 1, 1, 2});
  ExpectEachOnce(weighted, 200);
  EXPECT_EQ(weighted[0].size(), 40u);
  EXPECT_EQ(weighted[3].size(), 80u);
}

}  // namespace shardflow::pipeline::shard_rows_test
