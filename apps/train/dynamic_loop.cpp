// The training loop under dynamic sharding (dist.sharding = dynamic; dynamic_shard.hpp): each
// worker trains the batches it claims, as many as its speed allows, and the workers meet at
// fences, where what static sharding does at fixed steps happens: epoch-end metrics and
// evaluation, checkpoints, a stop, the end.
#include <algorithm>

#include "apps/train/training_loop.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/stop_signal.hpp"
#include "core/trace.hpp"

namespace shardflow::train::detail {

TrainResult TrainingLoop::RunDynamic(const StartPoint& start) {
  const int64_t from = OpenDynamicInput(start);
  if (AlreadyComplete(start, from)) return result_;
  OpenOutputs(from);
  const auto loop_start = Clock::now();
  int64_t local = 0;  // this worker's steps in this run (the test faults count these)
  bool asked_stop = false;
  while (true) {
    const auto t0 = Clock::now();
    int64_t claim = -1;
    bool got = false;
    {
      SF_TRACE_SCOPE("input");
      if (stall_) stall_->InputBegin(local);
      fault::At(fault::Point::kBeforeBatch, {.rank = job_.rank(), .index = local});
      got = dynamic_->Next(&batch_, &claim);
      if (stall_) stall_->InputEnd();
    }
    if (got) {
      fault::At(fault::Point::kStepStart, {.rank = job_.rank(), .index = local++});
      TrainClaimed(claim, t0);
      if (!asked_stop && StopSignal() != 0) {  // every worker meets at the claims so far
        dynamic_->RequestStop();
        asked_stop = true;
      }
      continue;
    }
    // A fence: every claim below it is trained, on every worker, once all are here.
    const int64_t fence = dynamic_->fence();
    const bool stop = dynamic_->Meet(*steps_, StopSignal() != 0);
    const int64_t done = dynamic_->plan().StepsDone(fence);
    const bool end = fence >= dynamic_->end_fence();
    const bool epoch_end = fence % dynamic_->plan().per_epoch == 0;
    if (stop && !end) {
      times_.wall_s = Since(loop_start);
      Stop(done);
      return result_;
    }
    if (end) {
      if (done > logged_step_) LogInterval(done - 1);
      FinishRun(done, loop_start);
      return result_;
    }
    if (epoch_end) {
      if (done > logged_step_) LogInterval(done - 1);
      if (inputs_.eval) Evaluate(done - 1, /*final=*/false);
    }
    MaybeCheckpoint(done - 1, /*interval_end=*/true);
    dynamic_->NextPass();
  }
}

// One claimed batch: trained at its nominal step, with that step's learning rate; a metrics
// line when this worker passes a multiple of log_every (asynchronous workers log their own).
void TrainingLoop::TrainClaimed(int64_t claim, Clock::time_point t0) {
  const int64_t step = dynamic_->plan().StepOf(claim);
  TrainBatch(step, t0, /*epoch_end=*/false);
  if (tb_) tb_->Histograms(step + 1, strategy_.replica_model(), o_.histogram_every);
  if (o_.log_every_steps > 0 &&
      (step + 1) / o_.log_every_steps > logged_step_ / o_.log_every_steps) {
    LogInterval(step);
  }
}

// The claim plan, the counter from where the run starts, and the step plan in nominal steps.
// Returns the nominal step the run starts at.
int64_t TrainingLoop::OpenDynamicInput(const StartPoint& start) {
  const InputFactories& f = inputs_.factories;
  if (!f.all_ids || !f.provided) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.sharding = dynamic reads records by their offsets, which this input "
                "cannot (data.format = tfrecord and hdf5 can)",
                {.key = "dist.sharding"});
  }
  std::vector<int64_t> order = f.all_ids();
  const ClaimPlan claims =
      ClaimPlan::Make(static_cast<int64_t>(order.size()), o_.per_rank_batch, steps_->size());
  plan_.steps_per_epoch = claims.steps_per_epoch;
  plan_.batches_per_epoch = claims.per_epoch;
  map_.steps_per_epoch = claims.steps_per_epoch;
  FinishPlan(o_, map_, &plan_);
  const int64_t fence = start.step > 0 ? ResumeFence(start, claims) : 0;
  const int64_t end = claims.FenceAtStep(plan_.total_steps);
  const int64_t start_fence = std::min(fence, end);
  dynamic_ =
      std::make_unique<DynamicShard>(f, JobClaims(*steps_, start_fence), claims, std::move(order),
                                     f.shuffle_seed, start_fence, o_.checkpoint_every_steps, end);
  const int64_t from = claims.StepsDone(fence);
  if (chief()) {
    SF_LOG(Info) << "dynamic sharding: " << claims.records << " records an epoch in "
                 << claims.per_epoch << " batches of " << claims.batch << ", claimed by "
                 << claims.workers << " workers as they go (" << claims.steps_per_epoch
                 << " nominal steps an epoch"
                 << (fence > 0 ? "; resumed at batch " + std::to_string(fence % claims.per_epoch) +
                                     " of epoch " + std::to_string(claims.EpochOf(fence) + 1)
                               : std::string())
                 << ")";
  }
  return from;
}

// The counter's value at the checkpoint: its fence, or the epoch boundary a checkpoint of
// static sharding was written at.
int64_t TrainingLoop::ResumeFence(const StartPoint& start, const ClaimPlan& claims) const {
  const std::string& state =
      start.elastic_states.empty() ? start.iterator_state : start.elastic_states.front();
  const SavedInput saved = DecodeSavedInput(state);
  int64_t fence = 0, records = 0, batch = 0;
  if (DecodeDynamicState(saved.pipeline, &fence, &records, &batch)) {
    if (records != claims.records) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the checkpoint's epoch has " + std::to_string(records) + " records, this " +
                      "run's " + std::to_string(claims.records) +
                      ": the data files changed since the checkpoint",
                  {.key = "data.files"});
    }
    if (batch != claims.batch) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the checkpoint's workers claimed batches of " + std::to_string(batch) +
                      " records, this run's take " + std::to_string(claims.batch),
                  {.key = "train.batch_semantics",
                   .hint = "resume with the same per-worker batch (batch_semantics = per_rank "
                           "keeps it on any worker count)"});
    }
    return fence;
  }
  const bool at_epoch_end = saved.world > 0 && !saved.in_remainder && start.step > 0 &&
                            saved.map.EpochEnd(start.step - 1);
  if (!at_epoch_end) {
    throw Error(ErrorCode::kInvalidArgument,
                "the checkpoint at step " + std::to_string(start.step) +
                    " was written inside an epoch by static sharding; dynamic sharding can "
                    "take over only at an epoch's end",
                {.key = "dist.sharding", .hint = "resume with dist.sharding = static"});
  }
  return (saved.map.EpochOf(start.step - 1) + 1) * claims.per_epoch;
}

}  // namespace shardflow::train::detail
