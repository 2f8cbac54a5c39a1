// The static step plan: how many steps every rank takes per epoch (the fewest any rank has
// batches for, so an uneven shard never leaves a rank waiting in a collective), what that
// leaves out, and the learning-rate schedule over the planned epochs. Dynamic sharding plans
// its own steps (dynamic_shard.hpp) and fills the same struct.
// Thread-safety: functions of their arguments; the ones taking a communicator are collective.
#pragma once

#include <cstdint>

#include "apps/train/rank_input.hpp"
#include "apps/train/trainer.hpp"
#include "comm/communicator.hpp"

namespace shardflow::train {

struct StepPlan {
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  LrScheduleOptions schedule;
  int64_t batches_per_epoch = 0;           // all ranks' batches in one pass over their shards
  int64_t batches_left_out_per_epoch = 0;  // past the agreed steps: never trained on
};

// Collective over `ctl`: the steps every rank takes per epoch, logged by rank 0 with what they
// leave out. Throws Error(kInvalidArgument) when some rank has no batch.
StepPlan PlanSteps(comm::Communicator& ctl, const TrainerOptions& o, int64_t local_batches);
// The step count and the learning-rate schedule of the epochs `map` lays out.
void FinishPlan(const TrainerOptions& o, const EpochMap& map, StepPlan* plan);
// Bad input records skipped over the job, each once. The ranks of a model-parallel replica read
// the same records, so a replica counts as its largest tally; parameter-server workers read
// disjoint shards (servers read none).
int64_t JobSkippedRecords(comm::Communicator& job, const TrainerOptions& o);

}  // namespace shardflow::train
