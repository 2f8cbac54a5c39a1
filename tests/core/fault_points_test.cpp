// The training points of the test-only fault seam (core/fault_injection.hpp): SHARDFLOW_TEST_FAULT
// and SHARDFLOW_TEST_ROW_IDS, parsed and acted on against explicit fault lists (the checkpoint
// points are fault_injection_test.cpp's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/fault_injection.hpp"

namespace shardflow::fault::points_test {

constexpr const char* kTrain = "SHARDFLOW_TEST_FAULT";

TEST(FaultPointsTest, EveryKindParsesToItsPointAndAction) {
  struct Case {
    const char* value;
    Point point;
    Fault::Action action;
    int rank;
    int64_t index;
    int64_t millis;
  };
  const Case cases[] = {
      {"kill:1:5", Point::kStepStart, Fault::Action::kKill, 1, 5, 0},
      {"hang:0:7", Point::kStepStart, Fault::Action::kStop, 0, 7, 0},
      {"term:all:25", Point::kStepStart, Fault::Action::kTerm, Fault::kEveryRank, 25, 0},
      {"usr1:2:10", Point::kStepStart, Fault::Action::kUsr1, 2, 10, 0},
      {"slow:0:150", Point::kStepStart, Fault::Action::kSleep, 0, Fault::kEveryIndex, 150},
      {"slow_input:1:25", Point::kBeforeBatch, Fault::Action::kSleep, 1, Fault::kEveryIndex, 25},
      {"stall:1:30", Point::kBeforeBatch, Fault::Action::kSleep, 1, 30, 1500},
      {"slow_checkpoint:0:3000", Point::kBeforeCheckpoint, Fault::Action::kSleep, 0,
       Fault::kEveryIndex, 3000},
      {"kill_allreduce:1:4", Point::kInAllreduce, Fault::Action::kKill, 1, 4, 50},
  };
  for (const Case& c : cases) {
    const std::vector<Fault> faults = Parse(kTrain, c.value);
    ASSERT_EQ(faults.size(), 1u) << c.value;
    EXPECT_EQ(faults[0].point, c.point) << c.value;
    EXPECT_EQ(faults[0].action, c.action) << c.value;
    EXPECT_EQ(faults[0].rank, c.rank) << c.value;
    EXPECT_EQ(faults[0].index, c.index) << c.value;
    EXPECT_EQ(faults[0].millis, c.millis) << c.value;
  }
  EXPECT_TRUE(Parse(kTrain, "").empty());
}

TEST(FaultPointsTest, SeveralFaultsSeparatedByCommas) {
  const std::vector<Fault> faults = Parse(kTrain, "slow:0:150,slow_checkpoint:0:2500");
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].point, Point::kStepStart);
  EXPECT_EQ(faults[1].point, Point::kBeforeCheckpoint);
  EXPECT_EQ(faults[1].millis, 2500);
  EXPECT_THROW(Parse(kTrain, "kill:1:5,"), Error);
  EXPECT_THROW(Parse(kTrain, "kill:1:5,,hang:0:2"), Error);
}

TEST(FaultPointsTest, MalformedTrainFaultNamesTheVariableAndTheForms) {
  for (const char* bad : {"kill", "kill:1", "kill:one:5", "kill:all:5", "slow:0:-3", "boom:0:1",
                          "kill:1:5x", "kill:1:5:6", "kill:-1:5", ":1:5"}) {
    try {
      Parse(kTrain, bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("bad SHARDFLOW_TEST_FAULT '") + bad + "'"), what.npos)
          << what;
      EXPECT_NE(what.find("term:RANK|all:STEP"), what.npos) << what;
    }
  }
}

TEST(FaultPointsTest, SleepActsOnItsRankAtEveryIndexOrOnlyItsOwn) {
  using Clock = std::chrono::steady_clock;
  const auto took = [](const std::vector<Fault>& faults, Point point, Site site) {
    const auto t0 = Clock::now();
    At(faults, point, site);
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  const std::vector<Fault> slow = Parse(kTrain, "slow:1:40");
  EXPECT_GE(took(slow, Point::kStepStart, {.rank = 1, .index = 0}), 40.0);
  EXPECT_GE(took(slow, Point::kStepStart, {.rank = 1, .index = 99}), 40.0);
  EXPECT_LT(took(slow, Point::kStepStart, {.rank = 0, .index = 0}), 40.0);
  EXPECT_LT(took(slow, Point::kBeforeBatch, {.rank = 1, .index = 0}), 40.0);
  const std::vector<Fault> stall = Parse(kTrain, "stall:0:3");
  EXPECT_LT(took(stall, Point::kBeforeBatch, {.rank = 0, .index = 2}), 1500.0);
  EXPECT_GE(took(stall, Point::kBeforeBatch, {.rank = 0, .index = 3}), 1500.0);
}

int g_usr1 = 0;
int g_term = 0;

TEST(FaultPointsTest, SchedulerSignalsReachEveryRankOrOne) {
  auto* old_usr1 = std::signal(SIGUSR1, [](int) { ++g_usr1; });
  auto* old_term = std::signal(SIGTERM, [](int) { ++g_term; });
  At(Parse(kTrain, "usr1:1:10"), Point::kStepStart, {.rank = 0, .index = 10});
  At(Parse(kTrain, "usr1:1:10"), Point::kStepStart, {.rank = 1, .index = 9});
  EXPECT_EQ(g_usr1, 0);
  At(Parse(kTrain, "usr1:1:10"), Point::kStepStart, {.rank = 1, .index = 10});
  EXPECT_EQ(g_usr1, 1);
  At(Parse(kTrain, "term:all:4"), Point::kStepStart, {.rank = 3, .index = 4});
  EXPECT_EQ(g_term, 2);  // twice, as an impatient scheduler sends it
  std::signal(SIGUSR1, old_usr1);
  std::signal(SIGTERM, old_term);
}

TEST(FaultPointsTest, KillAtAStepAndInTheAllreduceAnnounceThemselves) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<Fault> kill = Parse(kTrain, "kill:1:5");
  At(kill, Point::kStepStart, {.rank = 1, .index = 4});
  At(kill, Point::kStepStart, {.rank = 0, .index = 5});
  At(kill, Point::kInAllreduce, {.rank = 1, .index = 5});
  EXPECT_EXIT(At(kill, Point::kStepStart, {.rank = 1, .index = 5}),
              ::testing::KilledBySignal(SIGKILL),
              "SHARDFLOW_TEST_FAULT: rank 1 raises SIGKILL at step 5");
  const std::vector<Fault> in_allreduce = Parse(kTrain, "kill_allreduce:0:2");
  At(in_allreduce, Point::kStepStart, {.rank = 0, .index = 2});
  EXPECT_EXIT(At(in_allreduce, Point::kInAllreduce, {.rank = 0, .index = 2}),
              ::testing::KilledBySignal(SIGKILL),
              "SHARDFLOW_TEST_FAULT: rank 0 raises SIGKILL inside the gradient all-reduce of "
              "step 2");
}

TEST(FaultPointsTest, RowIdsAppendEachRanksLinesToItsOwnFile) {
  const std::string prefix =
      (std::filesystem::temp_directory_path() / ("fault_points_" + std::to_string(getpid())))
          .string();
  const std::vector<Fault> ids = Parse("SHARDFLOW_TEST_ROW_IDS", prefix);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].point, Point::kBatchTaken);
  At(ids, Point::kStepStart, {.rank = 0, .index = 0, .line = "not this"});
  At(ids, Point::kBatchTaken, {.rank = 0, .index = 0, .line = "0 0 4,5"});
  At(ids, Point::kBatchTaken, {.rank = 1, .index = 0, .line = "0 0 1,2"});
  At(ids, Point::kBatchTaken, {.rank = 0, .index = 1, .line = "0 1 7"});
  const auto read = [&](int rank) {
    std::ifstream in(prefix + ".rank" + std::to_string(rank));
    std::stringstream s;
    s << in.rdbuf();
    std::filesystem::remove(prefix + ".rank" + std::to_string(rank));
    return s.str();
  };
  EXPECT_EQ(read(0), "0 0 4,5\n0 1 7\n");
  EXPECT_EQ(read(1), "0 0 1,2\n");
}

}  // namespace shardflow::fault::points_test
