// Dynamic sharding's claim plan (apps/train/dynamic_shard.hpp): nominal steps of claims, fences
// at epoch ends, checkpoints and the end, and the saved state; on awkward sizes (a record count
// not divisible by the batch, fewer batches than workers, one worker).
#include "apps/train/dynamic_shard.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace shardflow::train {
namespace dynamic_shard_test {

TEST(ClaimPlanTest, CountsBatchesAndNominalSteps) {
  const ClaimPlan p = ClaimPlan::Make(250, 8, 3);  // 32 batches, the last of 2 records
  EXPECT_EQ(p.per_epoch, 32);
  EXPECT_EQ(p.steps_per_epoch, 11);
  EXPECT_EQ(p.StepOf(0), 0);
  EXPECT_EQ(p.StepOf(2), 0);
  EXPECT_EQ(p.StepOf(3), 1);
  EXPECT_EQ(p.StepOf(31), 10);
  EXPECT_EQ(p.StepOf(32), 11);  // epoch 1
  EXPECT_EQ(p.EpochOf(31), 0);
  EXPECT_EQ(p.EpochOf(32), 1);
  for (int64_t step = 0; step <= 33; ++step) {
    EXPECT_EQ(p.StepsDone(p.FenceAtStep(step)), step) << step;
  }
  EXPECT_EQ(p.FenceAtStep(11), 32);  // an epoch end
  EXPECT_EQ(p.FenceAtStep(10), 30);
  EXPECT_EQ(p.StepsDone(31), 11);  // a fence inside a step counts it begun
  EXPECT_EQ(ClaimPlan::Make(5, 8, 4).per_epoch, 1);
  EXPECT_EQ(ClaimPlan::Make(5, 8, 4).steps_per_epoch, 1);
  EXPECT_EQ(ClaimPlan::Make(16, 8, 1).steps_per_epoch, 2);
  EXPECT_THROW(ClaimPlan::Make(0, 8, 2), Error);
}

TEST(ClaimPlanTest, FencesAtEpochsCheckpointsAndTheEnd) {
  const ClaimPlan p = ClaimPlan::Make(250, 8, 2);  // 32 batches, 16 steps an epoch
  const int64_t end = p.FenceAtStep(40);           // 2.5 epochs: claim 80
  EXPECT_EQ(end, 80);
  EXPECT_EQ(p.NextFence(0, 0, end), 32);
  EXPECT_EQ(p.NextFence(32, 0, end), 64);
  EXPECT_EQ(p.NextFence(64, 0, end), 80);
  // Every 5 steps: claims 10, 20, 30, then the epoch end 32, then steps 20, 25, 30 (claims
  // 40, 50, 60), the epoch end 64, step 35 (70), the end.
  std::vector<int64_t> fences;
  for (int64_t f = 0; f < end;) fences.push_back(f = p.NextFence(f, 5, end));
  EXPECT_EQ(fences, (std::vector<int64_t>{10, 20, 30, 32, 40, 50, 60, 64, 70, 80}));
  // A stop's fence (anywhere): the next one is still on the schedule.
  EXPECT_EQ(p.NextFence(33, 5, end), 40);
}

TEST(ClaimPlanTest, StateRoundTripsAndDamageIsNamed) {
  const ClaimPlan p = ClaimPlan::Make(250, 8, 2);
  int64_t fence = 0, records = 0, batch = 0;
  ASSERT_TRUE(DecodeDynamicState(EncodeDynamicState(45, p), &fence, &records, &batch));
  EXPECT_EQ(fence, 45);
  EXPECT_EQ(records, 250);
  EXPECT_EQ(batch, 8);
  EXPECT_FALSE(DecodeDynamicState("SFPS....", &fence, &records, &batch));
  EXPECT_FALSE(DecodeDynamicState("", &fence, &records, &batch));
  EXPECT_THROW(DecodeDynamicState("dynamic 12 x", &fence, &records, &batch), Error);
}

}  // namespace dynamic_shard_test
}  // namespace shardflow::train
