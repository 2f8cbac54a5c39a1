#include "apps/train/step_plan.hpp"

#include <iomanip>
#include <map>
#include <sstream>

#include "apps/train/strategy_unit.hpp"
#include "comm/collectives.hpp"
#include "core/logging.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::train {
namespace {

// Above this fraction of an epoch's batches left out, or as many batches as ranks (more than
// the last record or so of each shard), the plan is logged as a warning.
constexpr double kLeftOutWarnFraction = 0.05;

// Every rank learns, and rank 0 logs, how much of each epoch the equal step count leaves out.
void CountLeftOut(comm::Communicator& ctl, const TrainerOptions& o, int64_t local_batches,
                  StepPlan* plan) {
  plan->batches_per_epoch = comm::AllreduceInt64(ctl, local_batches, comm::ReduceOp::kSum);
  plan->batches_left_out_per_epoch =
      comm::AllreduceInt64(ctl, local_batches - plan->steps_per_epoch, comm::ReduceOp::kSum);
  const int64_t most = comm::AllreduceInt64(ctl, local_batches, comm::ReduceOp::kMax);
  if (ctl.rank() != 0 || plan->batches_left_out_per_epoch == 0) return;
  const double fraction = static_cast<double>(plan->batches_left_out_per_epoch) /
                          static_cast<double>(plan->batches_per_epoch);
  std::ostringstream line;
  line << "ranks agree on " << plan->steps_per_epoch << " steps per epoch (the longest shard has "
       << most << " batches): " << plan->batches_left_out_per_epoch << " of "
       << plan->batches_per_epoch << " batches (up to "
       << plan->batches_left_out_per_epoch * o.per_rank_batch << " records, "
       << std::setprecision(3) << 100.0 * fraction
       << "%) are left out of every epoch (batches_left_out in metrics.jsonl and summary.json)";
  if (fraction > kLeftOutWarnFraction || plan->batches_left_out_per_epoch >= ctl.size()) {
    SF_LOG(Warn) << line.str()
                 << "; the shards are uneven: data.shard_policy = record (or auto) splits the "
                    "records evenly";
  } else {
    SF_LOG(Info) << line.str();
  }
}

}  // namespace

// How many steps: every rank takes the same number per epoch (the fewest any rank has
// batches for), so an uneven shard never leaves a rank waiting in a collective.

StepPlan PlanSteps(comm::Communicator& ctl, const TrainerOptions& o, int64_t local_batches) {
  StepPlan plan;
  plan.steps_per_epoch = comm::AllreduceInt64(ctl, local_batches, comm::ReduceOp::kMin);
  if (plan.steps_per_epoch <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "some rank has no training batch (rank " + std::to_string(ctl.rank()) + " has " +
                    std::to_string(local_batches) + "): too few records for " +
                    std::to_string(ctl.size()) + " ranks",
                {.hint = "lower train.batch_size or use fewer ranks"});
  }
  CountLeftOut(ctl, o, local_batches, &plan);
  return plan;
}

void FinishPlan(const TrainerOptions& o, const EpochMap& map, StepPlan* out) {
  StepPlan& plan = *out;
  const int64_t planned = map.PlannedSteps(o.epochs);
  plan.total_steps = o.max_steps > 0 ? std::min(planned, o.max_steps) : planned;
  // A cosine schedule without total_steps runs over all the epochs, whatever max_steps says:
  // a run stopped by max_steps and resumed sees the same learning rate at every step as one
  // run through.
  plan.schedule = o.schedule;
  if (plan.schedule.total_steps == 0) {
    plan.schedule.total_steps = std::max(planned, plan.schedule.warmup_steps + 1);
  }
  ValidateLrSchedule(plan.schedule);
}

int64_t JobSkippedRecords(comm::Communicator& job, const TrainerOptions& o) {
  const std::vector<int64_t> per_rank =
      comm::AllgatherInt64(job, pipeline::DistinctSkippedRecords());
  // Ranks that read one shard (the ranks of a model-parallel replica) skip the same records.
  const JobPlan plan = PlanOf(o, job.size());
  std::map<int, int64_t> per_shard;
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    const int shard = r < static_cast<int>(plan.ranks.size()) ? plan.ranks[r].shard : -1;
    const int key = shard >= 0 ? shard : -1 - r;
    per_shard[key] = std::max(per_shard[key], per_rank[static_cast<size_t>(r)]);
  }
  int64_t total = 0;
  for (const auto& [shard, n] : per_shard) total += n;
  return total;
}

}  // namespace shardflow::train
