// Unit tests of shardflow-convert's logic that needs no MPI: the shard plan, the window layout
// and the per-channel statistics, each against a naive twin.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "apps/convert/channel_stats.hpp"
#include "apps/convert/series_output.hpp"
#include "apps/convert/shard_plan.hpp"

namespace shardflow::convert {
namespace convert_logic_test {

// Every record in exactly one shard, shards contiguous and in order, every shard on exactly one
// rank, a rank's records the union of its shards: for awkward sizes and 1..5 ranks.
TEST(ShardPlanTest, PartitionsRecordsAndShards) {
  for (int64_t records : {0, 1, 5, 7, 1000, 1001}) {
    for (int64_t shards : {1, 3, 8, 13}) {
      std::vector<int> owner(static_cast<size_t>(shards), -1);
      for (int ranks = 1; ranks <= 5; ++ranks) {
        std::fill(owner.begin(), owner.end(), -1);
        int64_t next_record = 0;
        for (int r = 0; r < ranks; ++r) {
          const ShardPlan plan(records, shards, r, ranks);
          int64_t first = -1, last = -1;
          for (int64_t s = plan.MyShards().begin; s < plan.MyShards().end; ++s) {
            ASSERT_EQ(owner[static_cast<size_t>(s)], -1);
            owner[static_cast<size_t>(s)] = r;
            const io::RowRange ids = plan.ShardRecords(s);
            ASSERT_EQ(ids.begin, next_record) << records << " " << shards << " " << ranks;
            next_record = ids.end;
            if (first < 0) first = ids.begin;
            last = ids.end;
          }
          if (first >= 0) {
            EXPECT_EQ(plan.MyRecords().begin, first);
            EXPECT_EQ(plan.MyRecords().end, last);
          } else {
            EXPECT_EQ(plan.MyRecords().size(), 0);
          }
        }
        EXPECT_EQ(next_record, records);
        for (int o : owner) EXPECT_GE(o, 0);
      }
    }
  }
}

TEST(ShardPlanTest, FileNames) {
  EXPECT_EQ(ShardFileName("out/fm", 3, 8, "none"), "out/fm-00003-of-00008.tfrecord");
  EXPECT_EQ(ShardFileName("p", 0, 1, "gzip"), "p-00000-of-00001.tfrecord.gz");
  EXPECT_EQ(ShardFileName("p", 12, 100, "zlib"), "p-00012-of-00100.tfrecord.zlib");
}

// The layout against enumerating windows naively, including assets shorter than the window.
TEST(WindowLayoutTest, MatchesNaiveEnumeration) {
  const std::vector<int64_t> steps = {10, 0, 3, 4, 17, 5, 1};
  for (int64_t w : {1, 4, 5, 11}) {
    for (int64_t s : {1, 2, 3, 7}) {
      std::vector<std::pair<int64_t, int64_t>> naive;  // (asset, start)
      for (size_t a = 0; a < steps.size(); ++a) {
        for (int64_t t = 0; t + w <= steps[a]; t += s) naive.emplace_back(a, t);
      }
      const WindowLayout layout(steps, w, s);
      ASSERT_EQ(layout.total(), static_cast<int64_t>(naive.size())) << w << " " << s;
      for (int64_t id = 0; id < layout.total(); ++id) {
        EXPECT_EQ(layout.AssetOf(id), naive[id].first);
        EXPECT_EQ(layout.StartOf(id), naive[id].second);
      }
      for (int64_t b = 0; b < layout.total(); ++b) {
        for (int64_t e = b + 1; e <= layout.total(); ++e) {
          const auto [lo, hi] = layout.AssetsOf(b, e);
          EXPECT_EQ(lo, naive[b].first);
          EXPECT_EQ(hi, naive[e - 1].first + 1);
        }
      }
    }
  }
  EXPECT_EQ(WindowLayout({}, 3, 1).total(), 0);
}

// Block summaries merged in order equal a naive two-pass over all values, for any block cut.
TEST(ChannelStatsTest, MergedBlocksMatchNaive) {
  std::mt19937 rng(3);
  std::normal_distribution<double> dist(1000.0, 0.5);  // a large mean: cancellation-prone
  const int64_t rows = 1001, channels = 3;
  std::vector<double> data(rows * channels);
  for (double& x : data) x = dist(rng);
  for (int64_t cut : {1, 7, 100, 1001}) {
    std::vector<ChannelSummary> total(channels);
    for (int64_t b = 0; b < rows; b += cut) {
      const int64_t n = std::min(cut, rows - b);
      const auto s = Summarize(data.data() + b * channels, n, channels);
      for (int64_t c = 0; c < channels; ++c) Merge(total[c], s[c]);
    }
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, mn = data[c], mx = data[c];
      for (int64_t r = 0; r < rows; ++r) {
        sum += data[r * channels + c];
        mn = std::min(mn, data[r * channels + c]);
        mx = std::max(mx, data[r * channels + c]);
      }
      const double mean = sum / rows;
      double m2 = 0;
      for (int64_t r = 0; r < rows; ++r) m2 += std::pow(data[r * channels + c] - mean, 2);
      EXPECT_EQ(total[c].count, rows);
      EXPECT_NEAR(total[c].mean, mean, 1e-9);
      EXPECT_NEAR(total[c].m2 / rows, m2 / rows, 1e-9 * (m2 / rows));
      EXPECT_EQ(total[c].min, mn);
      EXPECT_EQ(total[c].max, mx);
    }
  }
}

TEST(ChannelStatsTest, NormalizationRules) {
  const std::vector<ChannelSummary> s = {{4, 2.0, 16.0, -1.0, 5.0}, {4, 7.0, 0.0, 7.0, 7.0}};
  const Normalization st = MakeNormalization("standardize", s, false);
  EXPECT_EQ(st.offset, (std::vector<double>{2.0, 7.0}));
  EXPECT_EQ(st.divisor, (std::vector<double>{2.0, 1.0}));  // std 0 counts as 1
  const Normalization sc = MakeNormalization("scale", s, false);
  EXPECT_EQ(sc.offset, (std::vector<double>{-1.0, 7.0}));
  EXPECT_EQ(sc.divisor, (std::vector<double>{6.0, 1.0}));  // constant channel -> 0
  const Normalization u8 = MakeNormalization("scale", std::vector<ChannelSummary>(1), true);
  const uint8_t pixels[3] = {0, 51, 255};
  float out[3];
  Normalize(u8, pixels, 3, 1, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.2f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_FALSE(MakeNormalization("none", s, false).enabled());
}

}  // namespace convert_logic_test
}  // namespace shardflow::convert
