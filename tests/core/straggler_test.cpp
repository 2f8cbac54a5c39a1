#include "core/straggler.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace shardflow {
namespace straggler_test {

// `steps` steps of `ranks` ranks that arrive after `base` seconds (input wait `wait`), except
// `slow`, which arrives `extra_input` + `extra_compute` later.
std::vector<std::vector<StepArrival>> Steps(int ranks, int steps, int slow, float extra_input,
                                            float extra_compute) {
  std::vector<std::vector<StepArrival>> per_rank(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    for (int t = 0; t < steps; ++t) {
      const float jitter = 1e-4f * static_cast<float>((r * 7 + t * 3) % 5);
      StepArrival a{.arrival_s = 0.010f + jitter, .input_s = 0.001f};
      if (r == slow) {
        a.arrival_s += extra_input + extra_compute;
        a.input_s += extra_input;
      }
      per_rank[static_cast<size_t>(r)].push_back(a);
    }
  }
  return per_rank;
}

TEST(StragglerTest, NamesTheSlowComputeRank) {
  const StragglerReport s = AttributeStragglers(Steps(4, 50, 2, 0.0f, 0.005f));
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.steps, 50);
  EXPECT_DOUBLE_EQ(s.last_fraction, 1.0);
  EXPECT_NEAR(s.margin_s, 0.005, 3e-4);
  EXPECT_EQ(s.cause, "compute");
  EXPECT_LT(s.input_share, 0.1);
  ASSERT_EQ(s.last_per_rank.size(), 4u);
  EXPECT_DOUBLE_EQ(s.last_per_rank[0], 0.0);
}

TEST(StragglerTest, NamesTheSlowInputRank) {
  const StragglerReport s = AttributeStragglers(Steps(2, 20, 1, 0.004f, 0.0005f));
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.cause, "input");
  EXPECT_GT(s.input_share, 0.8);
  EXPECT_NEAR(s.margin_s, 0.0045, 3e-4);
  const std::string line = FormatStraggler(s);
  EXPECT_NE(line.find("rank 1 was last to the all-reduce in 100% of 20 steps"), std::string::npos)
      << line;
  EXPECT_NE(line.find("input-bound"), std::string::npos) << line;
}

// The line names what the strategy's ranks meet at, not always an all-reduce.
TEST(StragglerTest, NamesWhatTheRanksWaitAt) {
  StragglerReport s = AttributeStragglers(Steps(2, 20, 1, 0.004f, 0.0005f));
  s.waited_at = "the step's all-reduces";
  const std::string line = FormatStraggler(s);
  EXPECT_NE(line.find("rank 1 was last to the step's all-reduces in 100% of 20 steps"),
            std::string::npos)
      << line;
}

TEST(StragglerTest, CountsTheStepsEachRankWasLast) {
  // Rank 0 late in 3 steps of 4, rank 1 in 1.
  std::vector<std::vector<StepArrival>> per_rank = {
      {{0.02f, 0}, {0.02f, 0}, {0.02f, 0}, {0.01f, 0}},
      {{0.01f, 0}, {0.01f, 0}, {0.01f, 0}, {0.03f, 0}},
  };
  const StragglerReport s = AttributeStragglers(per_rank);
  EXPECT_EQ(s.rank, 0);
  EXPECT_DOUBLE_EQ(s.last_fraction, 0.75);
  EXPECT_DOUBLE_EQ(s.last_per_rank[1], 0.25);
  EXPECT_NEAR(s.margin_s, 0.01, 1e-6);  // the median over the steps rank 0 was last in
}

TEST(StragglerTest, RanksTakingTurnsAreNoClearStraggler) {
  // Rank 0 late in 3 steps of 5, rank 1 in 2: 60% of 2 ranks is under 1.5 times the even share.
  std::vector<std::vector<StepArrival>> per_rank = {
      {{0.02f, 0}, {0.02f, 0}, {0.02f, 0}, {0.01f, 0}, {0.01f, 0}},
      {{0.01f, 0}, {0.01f, 0}, {0.01f, 0}, {0.03f, 0}, {0.03f, 0}},
  };
  const StragglerReport s = AttributeStragglers(per_rank);
  EXPECT_FALSE(s.Clear());
  EXPECT_EQ(FormatStraggler(s).rfind("no clear straggler (ranks take turns being last): rank 0 "
                                     "was last to the all-reduce in 60% of 5 steps",
                                     0),
            0u)
      << FormatStraggler(s);
  EXPECT_TRUE(AttributeStragglers(Steps(2, 10, 1, 0, 0.01f)).Clear());
}

TEST(StragglerTest, OneRankOrNoStepsIsEmpty) {
  EXPECT_EQ(AttributeStragglers({}).rank, -1);
  EXPECT_EQ(AttributeStragglers(Steps(1, 10, 0, 0, 0)).rank, -1);
  EXPECT_EQ(AttributeStragglers(Steps(2, 0, 0, 0, 0)).rank, -1);
  EXPECT_EQ(FormatStraggler({}), "");
}

TEST(StragglerTest, ALargerShardExplainsAnInputBoundStraggler) {
  StragglerReport s = AttributeStragglers(Steps(3, 20, 1, 0.004f, 0.0005f));
  ASSERT_TRUE(s.NeedsShards());
  s.shards = {{.bytes = 6'000'000, .records = 400},
              {.bytes = 12'300'000, .records = 400},
              {.bytes = 6'200'000, .records = 400}};
  ExplainByShard(&s);
  EXPECT_EQ(s.why,
            "its shard's files are 2.0x larger (12.3 MB, 400 records; the other ranks' median "
            "6.1 MB, 400 records)");
  const std::string line = FormatStraggler(s);
  EXPECT_NE(line.find("input-bound (input wait "), std::string::npos) << line;
  EXPECT_NE(line.find("of its extra time): its shard's files are 2.0x larger"), std::string::npos)
      << line;
  // More records in as many bytes.
  s.shards[1] = {.bytes = 6'100'000, .records = 900};
  ExplainByShard(&s);
  EXPECT_EQ(s.why.rfind("its shard has 2.2x the records (6.1 MB, 900 records;", 0), 0u) << s.why;
}

TEST(StragglerTest, AShardLikeTheOthersExplainsNothing) {
  StragglerReport s = AttributeStragglers(Steps(2, 20, 1, 0.004f, 0.0005f));
  s.shards = {{.bytes = 6'000'000, .records = 400}, {.bytes = 7'000'000, .records = 450}};
  ExplainByShard(&s);  // 1.17x: under the 1.25x that would explain it
  EXPECT_EQ(s.why, "");
  EXPECT_EQ(FormatStraggler(s).find("shard"), std::string::npos);
  s.shards = {{.bytes = 6'000'000, .records = 400}, {.bytes = -1, .records = 900}};
  ExplainByShard(&s);  // unknown bytes: nothing said
  EXPECT_EQ(s.why, "");
  // A compute-bound straggler is not explained by its data.
  StragglerReport compute = AttributeStragglers(Steps(2, 20, 1, 0.0f, 0.005f));
  EXPECT_FALSE(compute.NeedsShards());
  compute.shards = {{.bytes = 1'000'000, .records = 400}, {.bytes = 9'000'000, .records = 400}};
  ExplainByShard(&compute);
  EXPECT_EQ(compute.why, "");
}

}  // namespace straggler_test
}  // namespace shardflow
