#include "core/fault_injection.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardflow::fault {
namespace fault_injection_test {

constexpr const char* kVariable = "SHARDFLOW_TEST_CHECKPOINT_FAULT";

TEST(FaultInjectionTest, ParsesEveryCheckpointPhaseAndEnospc) {
  EXPECT_TRUE(Parse(kVariable, "").empty());
  const std::vector<std::pair<std::string, Point>> phases = {
      {"write", Point::kCheckpointWrite},
      {"fsync", Point::kCheckpointFsync},
      {"rename", Point::kCheckpointRename},
      {"published", Point::kCheckpointPublished},
      {"prune", Point::kCheckpointPrune}};
  for (const auto& [name, point] : phases) {
    const std::vector<Fault> faults = Parse(kVariable, name + ":3");
    ASSERT_EQ(faults.size(), 1u) << name;
    EXPECT_EQ(faults[0].point, point);
    EXPECT_EQ(faults[0].action, Fault::Action::kKill);
    EXPECT_EQ(faults[0].rank, 0);
    EXPECT_EQ(faults[0].index, 3);
    EXPECT_EQ(PointName(point), name);
  }
  const std::vector<Fault> enospc = Parse(kVariable, "enospc:12");
  ASSERT_EQ(enospc.size(), 1u);
  EXPECT_EQ(enospc[0].point, Point::kCheckpointWrite);
  EXPECT_EQ(enospc[0].action, Fault::Action::kFailNoSpace);
  EXPECT_EQ(enospc[0].index, 12);
}

TEST(FaultInjectionTest, MalformedValueNamesTheVariable) {
  for (const char* bad :
       {"write", "write:", "write:0", "write:x", "write:1:2", "write:-1", "boom:1", ":1", "enospc",
        "kill:1:5", "WRITE:1", "write:99999999999999999999"}) {
    try {
      Parse(kVariable, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("bad ") + kVariable + " '" + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(Parse("SHARDFLOW_TEST_NO_SUCH_FAULT", "write:1"), Error);
}

TEST(FaultInjectionTest, EnospcFailsOnlyRankZerosWriteOfThatCheckpoint) {
  const std::vector<Fault> faults = Parse(kVariable, "enospc:2");
  EXPECT_NO_THROW(At(faults, Point::kCheckpointWrite, {.rank = 0, .index = 1, .file = "a.tmp"}));
  EXPECT_NO_THROW(At(faults, Point::kCheckpointWrite, {.rank = 1, .index = 2, .file = "a.tmp"}));
  EXPECT_NO_THROW(At(faults, Point::kCheckpointFsync, {.rank = 0, .index = 2}));
  try {
    At(faults, Point::kCheckpointWrite, {.rank = 0, .index = 2, .file = "ckpt.h5.tmp.7"});
    ADD_FAILURE() << "no injected failure";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_STREQ(e.what(),
                 "I/O error: cannot write the HDF5 data: No space left on device (errno 28) "
                 "(injected by SHARDFLOW_TEST_CHECKPOINT_FAULT) [file=ckpt.h5.tmp.7]");
  }
}

TEST(FaultInjectionTest, KillAnnouncesThenRaisesSigkill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<Fault> faults = Parse(kVariable, "fsync:2");
  At(faults, Point::kCheckpointFsync, {.rank = 0, .index = 1});   // another checkpoint
  At(faults, Point::kCheckpointFsync, {.rank = 1, .index = 2});   // another rank
  At(faults, Point::kCheckpointRename, {.rank = 0, .index = 2});  // another phase
  EXPECT_EXIT(At(faults, Point::kCheckpointFsync, {.rank = 0, .index = 2}),
              ::testing::KilledBySignal(SIGKILL),
              "SHARDFLOW_TEST_CHECKPOINT_FAULT: SIGKILL at 'fsync' of checkpoint 2");
}

// The only test here that reads the environment: it is parsed once per process, and a
// malformed value is not remembered as parsed.
TEST(FaultInjectionTest, EnvironmentIsParsedOnceAndMalformedIsAnError) {
  setenv(kVariable, "prune", 1);
  EXPECT_THROW(CheckEnvironment(), Error);
  EXPECT_THROW(At(Point::kCheckpointPrune, {.rank = 1, .index = 1}), Error);
  setenv(kVariable, "prune:7", 1);
  EXPECT_TRUE(Armed(Point::kCheckpointPrune));
  EXPECT_FALSE(Armed(Point::kCheckpointWrite));
  setenv(kVariable, "write:1", 1);  // read once: no longer looked at
  EXPECT_FALSE(Armed(Point::kCheckpointWrite));
  EXPECT_NO_THROW(At(Point::kCheckpointWrite, {.rank = 0, .index = 1}));
  unsetenv(kVariable);
}

}  // namespace fault_injection_test
}  // namespace shardflow::fault
