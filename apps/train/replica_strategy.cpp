#include "apps/train/replica_strategy.hpp"

#include "apps/common/stage_plan.hpp"
#include "apps/train/memory_guard.hpp"
#include "apps/train/rank_states.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "core/host_state.hpp"
#include "core/logging.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"
#include "core/trace.hpp"
#include "io/checkpoint/checkpoint.hpp"

namespace shardflow::train {

ReplicaStrategy::ReplicaStrategy(const StrategyEnv& env)
    : env_(env), guard_(env.options->nonfinite) {
  spec_ = options().batch_spec();
}

ReplicaStrategy::~ReplicaStrategy() = default;

StartPoint ReplicaStrategy::Setup() {
  const TrainerOptions& o = options();
  const bool chief = ctl().rank() == 0;
  {
    int64_t parameters = 0;  // this rank's replica (without tables held elsewhere)
    for (const LayerInfo& layer :
         DescribeLayers(o.model_spec, o.input_shape, ReplicaModelOptions())) {
      parameters += layer.parameters;
    }
    CheckMemoryFits(o, parameters, job().local_size(), "the whole model (a replica on every rank)");
  }
  model_ = std::make_unique<Sequential<float>>(o.model_spec, o.input_shape, ReplicaModelOptions());
  optimizer_ = MakeOptimizer(o.optimizer, model_->arena().size());
  if (chief) SF_LOG(Info) << "model:\n" << model_->Summary();

  StartPoint start;
  if (o.resume) {
    if (o.checkpoint.dir.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "--resume needs a checkpoint directory",
                  {.key = "checkpoint.dir"});
    }
    TrainingState state;
    state.seed = o.model.seed;
    const std::string from = LoadLatestCheckpoint(o.checkpoint, *model_, optimizer_.get(), &state);
    if (from.empty() && !o.resume_if_possible) {
      throw Error(
          ErrorCode::kNotFound, "--resume: no usable checkpoint",
          {.file = o.checkpoint.dir, .hint = "--resume=auto starts fresh when there is none"});
    }
    if (from.empty()) {
      if (chief) {
        SF_LOG(Info) << "--resume=auto: no checkpoint in " << o.checkpoint.dir
                     << "; starting fresh";
      }
    } else {
      if (chief) SF_LOG(Info) << "resuming from " << from << " at step " << state.step;
      resumed_from_ = from;
      start.step = state.step;
      const int saved_by = RankStatesCount(state.iterator_state);
      if (trains_batches() && saved_by > 0 && saved_by != replicas().size()) {
        // Elastic resume: the loop re-partitions what the old ranks had left (rank_input.hpp;
        // dynamic sharding: the counter restarts at the saved fence, dynamic_shard.hpp). Every
        // replica strategy can: a replica is a rank, whatever the rank count.
        for (int r = 0; r < saved_by; ++r) {
          start.elastic_states.push_back(RankStateFromBlob(state.iterator_state, r, saved_by));
        }
      } else if (trains_batches()) {
        start.iterator_state =
            RankStateFromBlob(state.iterator_state, replicas().rank(), replicas().size());
      }
    }
  } else if (!o.warm_start.empty()) {
    LoadWeights(o.warm_start, *model_);
    if (chief) SF_LOG(Info) << "warm start: weights from " << o.warm_start;
  }
  BroadcastModel();
  AttachToModel();
  return start;
}

double ReplicaStrategy::BatchWeight(int64_t rows, bool epoch_end) {
  // Only the last step of an epoch can be partial, so only then do ranks exchange sizes; with
  // uneven batches (a global batch that does not divide), or when a corrupt image may leave
  // its batch a row short (skip: pipeline::DataOptions::skip_corrupt_elements), every step
  // does, unless each replica's gradient stands alone (averages_over_replicas: asynchronous
  // workers never wait for each other here but at an epoch's end).
  const pipeline::InputSpec& in = options().train_input;
  const bool may_drop =
      in.on_corrupt == "skip" || (in.data.format == "images" && in.format.on_error == "skip");
  const bool uneven = (!options().replica_batches.empty() || may_drop) && averages_over_replicas();
  if ((!epoch_end && !uneven) || replicas().size() == 1) return 1.0;
  const int64_t global = comm::AllreduceInt64(replicas(), rows, comm::ReduceOp::kSum);
  return global > 0 ? static_cast<double>(rows) * replicas().size() / static_cast<double>(global)
                    : 0;
}

StepOutput ReplicaStrategy::TrainStep(const StepInput& in) {
  const TrainerOptions& o = options();
  const ModelBatch& mb = *in.batch;
  const double weight = BatchWeight(mb.rows, in.epoch_end);
  StepOutput out;
  out.rows = mb.rows;
  BeforeForward(in);
  {
    SF_TRACE_SCOPE("forward");
    model_->set_step(static_cast<uint64_t>(in.step));
    const Tensor y = model_->Forward(mb.x, /*training=*/true);
    if (o.task == Task::kClassify) {
      out.loss = SoftmaxCrossEntropy<float>(y, mb.labels, &dout_);
      out.correct = CorrectPerSample<float>(y, mb.labels);
    } else {
      out.loss = MeanSquaredError<float>(y, mb.x, &dout_);
    }
  }
  if (weight != 1.0) {
    BackendFor<float>(dout_.device())
        .Scale(dout_.num_elements(), static_cast<float>(weight), dout_.device_data<float>());
  }
  NonfiniteGuard::PoisonIfNonfinite(out.loss, &dout_);
  {
    SF_TRACE_SCOPE("backward");
    model_->arena().ZeroGrads();
    BeginBackward();
    model_->Backward(dout_);
  }
  // The device runs backprop (and its bucket all-reduces) while the host does this.
  if (in.while_device_busy) in.while_device_busy();
  {
    SF_TRACE_SCOPE("allreduce_wait");
    out.comm_blocked_s = FinishGradients();
  }
  {
    SF_TRACE_SCOPE("update");
    Arena<float>& arena = model_->arena();
    const StepPlace at{
        .step = in.step, .epoch = in.epoch, .learning_rate = in.learning_rate, .loss = out.loss};
    out.skipped = !guard_.CheckGradients(at, arena, o.clip_norm);
    if (out.skipped) {
      SkipUpdate(in);
    } else {
      ApplyUpdate(in);
    }
  }
  AfterUpdate(in.step);
  if (out.skipped) {  // a skipped step adds nothing to the metrics (its loss is not finite)
    out.rows = 0;
    out.correct = 0;
    return out;
  }
  out.loss_sum = out.loss * static_cast<double>(mb.rows);
  return out;
}

EvalResult ReplicaStrategy::Evaluate(const pipeline::Dataset& eval) {
  SF_TRACE_SCOPE("evaluate");
  SyncReplicas();
  EvalSums sums;
  auto it = eval.MakeIterator();
  pipeline::Element batch;
  while (it.Next(&batch)) {
    const ModelBatch mb = ToModelBatch(batch, spec_, &eval_scratch_);
    if (mb.rows == 0) continue;
    BeforeEvalForward(mb);
    sums.Add(options().task, model_->Forward(mb.x, /*training=*/false), mb.labels, mb.x);
  }
  return sums.Reduce(replicas());
}

void ReplicaStrategy::ApplyUpdate(const StepInput& in) {
  optimizer_->Step(model_->arena(), in.learning_rate);
}

void ReplicaStrategy::SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                                     const std::string& iterator_state) {
  const TrainerOptions& o = options();
  if (o.checkpoint.dir.empty()) return;
  SF_TRACE_SCOPE("checkpoint");
  SyncReplicas();
  const std::vector<uint8_t> states = GatherRankStates(iterator_state, replicas());
  if (replicas().rank() != 0) return;
  TrainingState s;
  s.step = steps_done;
  s.epoch = steps_done / steps_per_epoch;
  s.seed = o.model.seed;
  s.iterator_state = states;
  s.config_text = o.config_text;
  const std::string path = WriteCheckpoint(s);  // not inside SF_LOG: it skips below log.level
  SF_LOG(Info) << "checkpoint " << path;
}

std::string ReplicaStrategy::WriteCheckpoint(const TrainingState& state) {
  return shardflow::SaveCheckpoint(options().checkpoint, *model_, optimizer_.get(), state);
}

void ReplicaStrategy::FinishReport(RunSummary* summary) { summary->strategy = name(); }

std::vector<float> ReplicaStrategy::FinalParams() {
  const Tensor params = model_->arena().params_tensor().To(Device::kCpu);
  return std::vector<float>(params.data<float>(), params.data<float>() + params.num_elements());
}

void ReplicaStrategy::SyncReplicas() { AverageBuffers(); }

// The collectives below work on host memory: a model on a device takes part through host
// copies of its state (HostStateScope), copied back after.
void ReplicaStrategy::BroadcastModel() {
  HostStateScope on_host(*model_, nullptr);
  comm::Broadcast(ctl(), model_->arena().params(), static_cast<size_t>(model_->arena().size()));
  for (const NamedTensor& b : model_->Buffers()) {
    comm::Broadcast(ctl(), b.tensor->data<float>(), static_cast<size_t>(b.tensor->num_elements()));
  }
  on_host.CopyBack();
}

void ReplicaStrategy::AverageParams() {
  if (replicas().size() == 1) return;
  HostStateScope on_host(*model_, nullptr);
  comm::Allreduce(
      replicas(), model_->arena().params(), static_cast<size_t>(model_->arena().size()),
      {.algorithm = comm::AllreduceAlgorithm::kMpi, .mode = comm::ReduceMode::kAverage});
  on_host.CopyBack();
}

// Batch-norm running statistics are updated by each rank's own batches; average them so
// evaluation and checkpoints see one consistent model.
void ReplicaStrategy::AverageBuffers() {
  if (model_->Buffers().empty()) return;
  HostStateScope on_host(*model_, nullptr, HostStateScope::What::kBuffersOnly);
  for (const NamedTensor& b : model_->Buffers()) {
    comm::Allreduce(
        replicas(), b.tensor->data<float>(), static_cast<size_t>(b.tensor->num_elements()),
        {.algorithm = comm::AllreduceAlgorithm::kMpi, .mode = comm::ReduceMode::kAverage});
  }
  on_host.CopyBack();
}

}  // namespace shardflow::train
