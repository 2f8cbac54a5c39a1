#include "apps/train/strategies/model_parallel/model_parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "apps/common/pipeline_stage.hpp"
#include "apps/common/stage_plan.hpp"
#include "apps/common/tensor_sum.hpp"
#include "apps/train/memory_guard.hpp"
#include "apps/train/nonfinite_guard.hpp"
#include "apps/train/rank_states.hpp"
#include "apps/train/strategies/model_parallel/whole_params.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "comm/device_allreduce.hpp"
#include "core/backend/device_runtime.hpp"
#include "core/host_staging.hpp"
#include "core/host_state.hpp"
#include "core/logging.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"
#include "core/optim/clip.hpp"
#include "core/trace.hpp"
#include "io/checkpoint/checkpoint.hpp"

namespace shardflow::train {
namespace {

using apps::DescribeStages;
using apps::IdealBubbleFraction;
using apps::MicroBatchRows;
using apps::PipelineStage;
using apps::StageTimes;

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Drops the empty micro-batches of a small (partial) batch.
std::vector<int64_t> NonEmptyParts(int64_t rows, int micro_batches) {
  std::vector<int64_t> parts = MicroBatchRows(rows, micro_batches);
  parts.erase(std::remove(parts.begin(), parts.end(), int64_t{0}), parts.end());
  return parts;
}

apps::RankPlan PlanRank(const TrainerOptions& o, int rank) {
  return apps::PlanRank(o, o.model_parallel.grid, o.model_parallel.stage_boundaries, rank);
}

class ModelParallelStrategy final : public Strategy {
 public:
  explicit ModelParallelStrategy(const StrategyEnv& env)
      : env_(env),
        o_(*env.options),
        mp_(o_.model_parallel),
        grid_(mp_.grid),
        place_(apps::PlaceOf(grid_, env.job->rank())),
        guard_(o_.nonfinite) {}

  std::string name() const override { return "model_parallel"; }
  CommProfile comm_profile() const override {
    return {.waits_for = "the step's all-reduces",
            .blocked_on = "pipeline sends and the replicas' and tensor ways' all-reduces",
            .buckets = 0,
            .knob = "more micro-batches (dist.micro_batches, now " +
                    std::to_string(mp_.micro_batches) + ") to hide the pipeline's waits"};
  }
  StartPoint Setup() override;
  StepOutput TrainStep(const StepInput& in) override;
  EvalResult Evaluate(const pipeline::Dataset& eval) override;
  void SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                      const std::string& iterator_state) override;
  int data_parallel_size() const override { return grid_.replicas; }
  bool counts_samples() const override { return place_.stage == 0 && place_.way == 0; }
  int data_replica() const override { return place_.replica; }
  void FinishReport(RunSummary* summary) override;
  std::vector<float> FinalParams() override;

 private:
  // The rank that reports a replica's loss and metrics (the loop sums over all ranks).
  bool reporter() const { return place_.stage == grid_.stages - 1 && place_.way == 0; }
  void MakeCommunicators();
  void AttachDeviceAllreduce();
  StartPoint Restore();
  void LogGrid(const std::vector<LayerCost>& layers) const;
  // The last stage's loss of rows [begin, end) of the batch into `dy`; adds to the step sums.
  void Loss(const ModelBatch& mb, double scale, const Tensor& y, int64_t begin, int64_t end,
            Tensor* dy);
  // After the passes: the replicas' gradient average, the replica's agreement on loss and norm,
  // the update. Returns the seconds spent in collectives.
  double FinishStep(const StepInput& in, StepOutput* out);
  void AverageBuffers();
  // Sum of squares of this rank's gradients, each parameter counted once over the tensor ways
  // (a replicated one on way 0 only).
  double OwnSquaredNorm();
  void AverageReplicaGrads();
  bool OwnGradsFinite();  // this rank's gradients (host copies for a device)

  StrategyEnv env_;
  const TrainerOptions& o_;
  const ModelParallelOptions& mp_;
  const apps::GridShape grid_;
  const apps::GridPlace place_;
  std::vector<int> bounds_;
  std::unique_ptr<comm::Communicator> pipe_, model_comm_, replicas_, tensor_, leaders_;
  std::unique_ptr<Sequential<float>> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PipelineStage> stage_;
  // A model on a device: the replicas' gradient average where the gradients lie (on a
  // communicator of its own), when the program registered one.
  std::unique_ptr<comm::Communicator> device_comm_;
  std::unique_ptr<comm::DeviceAllreduce> device_reduce_;
  // Where gradients go through host memory (the replicas' average without a device all-reduce,
  // the finite check): a pass-through on the CPU.
  HostStaging grads_staging_;
  // The tensor-parallel layers' all-reduce (SUM over this stage's ways), timed.
  std::unique_ptr<apps::TensorSum> tensor_sum_;
  NonfiniteGuard guard_;
  BatchSpec spec_ = o_.batch_spec();
  Tensor eval_scratch_;
  // This step's sums on the last stage.
  double loss_sum_ = 0;
  double correct_ = 0;
  bool loss_finite_ = true;
  // Totals for the report.
  StageTimes times_;
  double collective_s_ = 0;
};

StartPoint ModelParallelStrategy::Setup() {
  const apps::RankPlan plan = PlanRank(o_, env_.job->rank());
  bounds_ = plan.bounds;
  CheckMemoryCap(o_, plan.parameters, plan.holder);
  MakeCommunicators();
  ModelOptions options = o_.model;
  if (grid_.ways > 1) {
    options.tensor_parallel = {.way = place_.way,
                               .ways = grid_.ways,
                               .sum_float = [this](float* x, int64_t n) { (*tensor_sum_)(x, n); }};
  }
  model_ = std::make_unique<Sequential<float>>(o_.model_spec, o_.input_shape, options, plan.range);
  optimizer_ = MakeOptimizer(o_.optimizer, model_->arena().size());
  stage_ = std::make_unique<PipelineStage>(*pipe_, *model_);
  grads_staging_ = HostStaging(model_->arena().device());
  AttachDeviceAllreduce();
  LogGrid(plan.layers);
  return Restore();
}

// Resume or warm start from the whole model's checkpoint, whatever grid wrote it: rank 0 picks
// the newest intact file, every rank loads its own part of it.
StartPoint ModelParallelStrategy::Restore() {
  StartPoint start;
  const bool chief = env_.ctl->rank() == 0;
  if (!o_.warm_start.empty()) {
    LoadWeights(o_.warm_start, *model_);
    if (chief) SF_LOG(Info) << "warm start: weights from " << o_.warm_start;
    return start;
  }
  if (!o_.resume) return start;
  std::string path;
  TrainingState state;
  if (chief) path = LoadLatestCheckpoint(o_.checkpoint, *model_, optimizer_.get(), &state);
  comm::BroadcastString(*env_.ctl, &path);
  if (path.empty()) {
    if (!o_.resume_if_possible) {
      throw Error(
          ErrorCode::kNotFound, "--resume: no usable checkpoint",
          {.file = o_.checkpoint.dir, .hint = "--resume=auto starts fresh when there is none"});
    }
    if (chief) SF_LOG(Info) << "--resume=auto: no checkpoint in " << o_.checkpoint.dir;
    return start;
  }
  if (!chief) state = LoadCheckpoint(path, *model_, optimizer_.get());
  if (chief) SF_LOG(Info) << "resuming from " << path << " at step " << state.step;
  start.step = state.step;
  // One input position per data replica (every rank of a replica reads alike). Written by
  // another number of replicas (another grid, or data parallel): an elastic resume
  // (rank_input.hpp) deals what they had left of the epoch to this grid's replicas.
  const int saved_by = RankStatesCount(state.iterator_state);
  if (saved_by > 0 && saved_by != grid_.replicas) {
    for (int r = 0; r < saved_by; ++r) {
      start.elastic_states.push_back(RankStateFromBlob(state.iterator_state, r, saved_by));
    }
  } else {
    start.iterator_state = RankStateFromBlob(state.iterator_state, place_.replica, grid_.replicas);
  }
  return start;
}

void ModelParallelStrategy::AttachDeviceAllreduce() {
  if (!UseDeviceAllreduce(o_, model_->arena().device()) || grid_.replicas == 1) return;
  comm::CommunicatorOptions with_watchdog;
  with_watchdog.discover_topology = false;
  with_watchdog.watchdog = comm::WatchdogOptions{.timeout_seconds = o_.watchdog_seconds};
  device_comm_ = replicas_->Split(0, replicas_->rank(), with_watchdog);
  device_reduce_ = (*comm::DeviceAllreduceFor(model_->arena().device()))(
      *device_comm_, {.watchdog_seconds = o_.watchdog_seconds, .host = o_.allreduce});
  if (env_.ctl->rank() == 0) {
    SF_LOG(Info) << "gradients: averaged over the " << grid_.replicas << " replicas on the device ("
                 << device_reduce_->name() << ")";
  }
}

void ModelParallelStrategy::MakeCommunicators() {
  const comm::Communicator& job = *env_.job;
  comm::CommunicatorOptions with_watchdog;
  with_watchdog.discover_topology = false;
  with_watchdog.watchdog = comm::WatchdogOptions{.timeout_seconds = o_.watchdog_seconds};
  const int d = place_.replica, s = place_.stage, t = place_.way, ways = grid_.ways;
  pipe_ = job.Split(d * ways + t, s, with_watchdog);
  model_comm_ = job.Split(d, s * ways + t, with_watchdog);
  comm::CommunicatorOptions on_node = with_watchdog;
  on_node.discover_topology = true;  // the all-reduces pick shm on a node
  replicas_ = job.Split(s * ways + t, d, on_node);
  tensor_ = job.Split(s * grid_.replicas + d, t, on_node);
  // The first rank of each replica (stage 0, way 0): rank r of `leaders_` is replica r.
  const bool leader = s == 0 && t == 0;
  leaders_ = job.Split(leader ? 0 : 1, d, with_watchdog);
  if (!leader) leaders_.reset();
  tensor_sum_ = std::make_unique<apps::TensorSum>(*tensor_, o_.model.device);
}

void ModelParallelStrategy::LogGrid(const std::vector<LayerCost>& layers) const {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string mine = "rank " + std::to_string(env_.job->rank()) + ": replica " +
                           std::to_string(place_.replica) + ", stage " +
                           std::to_string(place_.stage) + ", way " + std::to_string(place_.way) +
                           " on " + host + ", layers " + std::to_string(model_->first_layer()) +
                           "-" + std::to_string(model_->first_layer() + model_->num_layers() - 1) +
                           ", " + std::to_string(model_->arena().size()) + " parameters";
  const std::vector<std::vector<uint8_t>> all =
      comm::GatherBytes(*env_.ctl, mine.data(), mine.size());
  if (env_.ctl->rank() != 0) return;
  SF_LOG(Info) << "grid: " << grid_.ToString() << " = " << grid_.ranks() << " ranks; schedule "
               << PipelineScheduleName(mp_.schedule) << ", " << mp_.micro_batches
               << " micro-batches per step";
  if (grid_.stages > 1) {
    SF_LOG(Info) << "stages" << (mp_.stage_boundaries.empty() ? " (balanced by FLOPs)" : "") << ": "
                 << DescribeStages(bounds_, layers);
  }
  for (const std::vector<uint8_t>& line : all) {
    SF_LOG(Info) << "grid: " << std::string(line.begin(), line.end());
  }
}

void ModelParallelStrategy::Loss(const ModelBatch& mb, double scale, const Tensor& y, int64_t begin,
                                 int64_t end, Tensor* dy) {
  double loss = 0;
  if (o_.task == Task::kClassify) {
    const Tensor labels = mb.labels.Slice(begin, end);
    loss = SoftmaxCrossEntropy<float>(y, labels, dy);
    correct_ += CorrectPerSample<float>(y, labels);
  } else {
    loss = MeanSquaredError<float>(y, mb.x.Slice(begin, end), dy);
  }
  const int64_t rows = end - begin;
  loss_sum_ += loss * static_cast<double>(rows);
  // dL/dy of the batch's mean loss: this micro-batch's mean-loss gradient times its share.
  const float share = static_cast<float>(scale * static_cast<double>(rows));
  BackendFor<float>(dy->device()).Scale(dy->num_elements(), share, dy->device_data<float>());
  if (!std::isfinite(loss)) {
    loss_finite_ = false;
    NonfiniteGuard::PoisonIfNonfinite(loss, dy);
  }
}

StepOutput ModelParallelStrategy::TrainStep(const StepInput& in) {
  const ModelBatch& mb = *in.batch;
  double weight = 1.0;  // a partial last batch (or uneven batches) weighs by rows
  if ((in.epoch_end || !o_.replica_batches.empty()) && grid_.replicas > 1) {
    const int64_t global = comm::AllreduceInt64(*replicas_, mb.rows, comm::ReduceOp::kSum);
    weight = global > 0 ? static_cast<double>(mb.rows) * grid_.replicas / global : 0;
  }
  loss_sum_ = 0;
  correct_ = 0;
  loss_finite_ = true;
  model_->arena().ZeroGrads();
  const double scale = mb.rows > 0 ? weight / static_cast<double>(mb.rows) : 0;
  const StageTimes t = stage_->Train(mp_.schedule, NonEmptyParts(mb.rows, mp_.micro_batches), mb.x,
                                     static_cast<uint64_t>(in.step),
                                     [&](const Tensor& y, int64_t begin, int64_t end, Tensor* dy) {
                                       Loss(mb, scale, y, begin, end, dy);
                                     });
  times_.compute_s += t.compute_s;
  times_.p2p_wait_s += t.p2p_wait_s;
  times_.total_s += t.total_s;
  // A device may still run the last backward kernels while the host stages the next batch.
  if (in.while_device_busy) in.while_device_busy();
  StepOutput out;
  const double collective = FinishStep(in, &out);
  out.comm_blocked_s = t.p2p_wait_s + collective;
  return out;
}

double ModelParallelStrategy::FinishStep(const StepInput& in, StepOutput* out) {
  const auto t0 = Clock::now();
  Arena<float>& arena = model_->arena();
  if (grid_.replicas > 1) {
    SF_TRACE_SCOPE("allreduce_wait");
    AverageReplicaGrads();
  }
  const bool reports = reporter();
  double sums[4] = {OwnSquaredNorm(), reports ? loss_sum_ : 0.0,
                    reports ? static_cast<double>(correct_) : 0.0,
                    reports ? static_cast<double>(in.batch->rows) : 0.0};
  comm::AllreduceDoubles(*model_comm_, sums, 4, comm::ReduceOp::kSum);
  const double collective = Since(t0);
  collective_s_ += collective;
  const double norm = std::sqrt(sums[0]);
  // The whole model's gradients are finite exactly when the sum of squares is: a stage whose
  // own gradients are finite marks them so the guard sees the replica's verdict.
  if (!std::isfinite(norm) && arena.size() > 0 && OwnGradsFinite()) {
    BackendFor<float>(arena.device())
        .Fill(1, std::numeric_limits<float>::quiet_NaN(), arena.device_grads());
  }
  if (o_.clip_norm > 0 && std::isfinite(norm) && norm > o_.clip_norm) {
    const float factor = static_cast<float>(o_.clip_norm / norm);
    BackendFor<float>(arena.device()).Scale(arena.size(), factor, arena.device_grads());
  }
  out->loss = sums[3] > 0 ? sums[1] / sums[3] : 0.0;
  const StepPlace at{
      .step = in.step, .epoch = in.epoch, .learning_rate = in.learning_rate, .loss = out->loss};
  {
    SF_TRACE_SCOPE("update");
    out->skipped = !guard_.CheckGradientsWithNorm(at, arena, norm);
    if (!out->skipped) optimizer_->Step(arena, in.learning_rate);
  }
  if (reports && !out->skipped) {
    out->rows = in.batch->rows;
    out->loss_sum = loss_sum_;
    out->correct = correct_;
  }
  return collective;
}

EvalResult ModelParallelStrategy::Evaluate(const pipeline::Dataset& eval) {
  SF_TRACE_SCOPE("evaluate");
  AverageBuffers();
  EvalSums sums;  // the reporters' only
  auto it = eval.MakeIterator();
  pipeline::Element batch;
  while (it.Next(&batch)) {
    const ModelBatch mb = ToModelBatch(batch, spec_, &eval_scratch_);
    if (mb.rows == 0) continue;
    stage_->Infer(NonEmptyParts(mb.rows, mp_.micro_batches), mb.x,
                  [&](const Tensor& y, int64_t begin, int64_t end) {
                    if (!reporter()) return;
                    const Tensor labels =
                        mb.labels.num_elements() > 0 ? mb.labels.Slice(begin, end) : Tensor();
                    sums.Add(o_.task, y, labels, mb.x.Slice(begin, end));
                  });
  }
  return sums.Reduce(*env_.ctl);
}

// The replicas' average of this rank's gradients: where they lie when the program has a device
// all-reduce (NCCL; dist.device_allreduce), else in host memory (staged for a device model).
void ModelParallelStrategy::AverageReplicaGrads() {
  Arena<float>& arena = model_->arena();
  const comm::AllreduceOptions average{.algorithm = o_.allreduce.algorithm,
                                       .mode = comm::ReduceMode::kAverage,
                                       .wire = o_.allreduce.wire};
  const auto n = static_cast<size_t>(arena.size());
  if (device_reduce_) {  // only ever made for a model on a device
    device_reduce_->Start(arena.device_grads(), n);
    device_reduce_->Finish();
    return;
  }
  float* host = grads_staging_.ToHost(arena.device_grads(), n);  // the gradients on the CPU
  comm::Allreduce(*replicas_, host, n, average);
  grads_staging_.ToDevice(arena.device_grads(), host, n);
}

bool ModelParallelStrategy::OwnGradsFinite() {
  Arena<float>& arena = model_->arena();
  const float* host =
      grads_staging_.ToHost(arena.device_grads(), static_cast<size_t>(arena.size()));
  return AllFinite(host, arena.size());
}

double ModelParallelStrategy::OwnSquaredNorm() {
  Arena<float>& arena = model_->arena();
  // Host memory (the CPU) sums each parameter's norm on the host, as the unsplit model's
  // clipping does; a device sums with its backend.
  const bool host = DeviceSupports(arena.device(), DeviceFeature::kHostMemory);
  if (!host && place_.way == 0) {  // every parameter: one reduction
    return BackendFor<float>(arena.device()).SumSquares(arena.size(), arena.device_grads());
  }
  double sum = 0;
  for (int id = 0; id < arena.num_params(); ++id) {
    const ParamSpec& spec = arena.spec(id);
    if (spec.split_axis < 0 && place_.way != 0) continue;
    if (host) {
      const double norm = GlobalNorm(arena.grad(id), spec.size);
      sum += norm * norm;
    } else {
      sum += BackendFor<float>(arena.device()).SumSquares(spec.size, arena.grad(id));
    }
  }
  return sum;
}

void ModelParallelStrategy::AverageBuffers() {
  if (grid_.replicas == 1 || model_->Buffers().empty()) return;
  HostStateScope on_host(*model_, nullptr, HostStateScope::What::kBuffersOnly);
  for (const NamedTensor& b : model_->Buffers()) {
    comm::Allreduce(
        *replicas_, b.tensor->data<float>(), static_cast<size_t>(b.tensor->num_elements()),
        {.algorithm = comm::AllreduceAlgorithm::kMpi, .mode = comm::ReduceMode::kAverage});
  }
  on_host.CopyBack();
}

// The whole model's file, written by replica 0's ranks (each its stage's and way's part); the
// input position of every replica gathered from the replicas' first ranks.
void ModelParallelStrategy::SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                                           const std::string& iterator_state) {
  if (o_.checkpoint.dir.empty()) return;
  SF_TRACE_SCOPE("checkpoint");
  AverageBuffers();
  TrainingState s;
  if (leaders_) s.iterator_state = GatherRankStates(iterator_state, *leaders_);
  if (place_.replica != 0) return;
  s.step = steps_done;
  s.epoch = steps_done / steps_per_epoch;
  s.seed = o_.model.seed;
  s.config_text = o_.config_text;
  const std::string path =
      SavePartitionedCheckpoint(o_.checkpoint, model_comm_->raw(), *model_, optimizer_.get(), s);
  if (env_.ctl->rank() == 0) SF_LOG(Info) << "checkpoint " << path;
}

void ModelParallelStrategy::FinishReport(RunSummary* summary) {
  summary->strategy = name();
  summary->grid = grid_.ToString() + ", " + PipelineScheduleName(mp_.schedule) + ", " +
                  std::to_string(mp_.micro_batches) + " micro-batches";
  const double bubble = times_.total_s > 0 ? 1.0 - times_.compute_s / times_.total_s : 0.0;
  double sums[4] = {bubble, times_.p2p_wait_s, collective_s_, tensor_sum_->seconds()};
  comm::AllreduceDoubles(*env_.ctl, sums, 4, comm::ReduceOp::kSum);
  double most[2] = {static_cast<double>(stage_->max_in_flight()),
                    static_cast<double>(stage_->slots_made())};
  comm::AllreduceDoubles(*env_.ctl, most, 2, comm::ReduceOp::kMax);
  const double n = static_cast<double>(env_.ctl->size());
  summary->strategy_figures = {
      {"bubble_fraction", sums[0] / n},
      {"ideal_bubble_fraction", IdealBubbleFraction(grid_.stages, mp_.micro_batches)},
      {"p2p_wait_s", sums[1] / n},
      {"collective_s", sums[2] / n},
      {"tensor_allreduce_s", sums[3] / n},
      {"max_micro_batches_in_flight", most[0]},
      {"max_micro_batch_slots", most[1]}};
}

std::vector<float> ModelParallelStrategy::FinalParams() {
  const HostStateScope on_host(*model_, nullptr);
  return GatherWholeParams(*env_.ctl, place_.replica == 0, *model_, o_.model_spec, o_.input_shape,
                           o_.model);
}

}  // namespace

StrategyUnit ModelParallelUnit() {
  StrategyUnit unit;
  unit.name = "model_parallel";
  unit.summary =
      "data replicas x dist.pipeline_stages x dist.tensor_parallel ranks: each rank a stage or "
      "a tensor way of a replica (dist.stage_boundaries, micro_batches, schedule); claims every "
      "run whose grid has stages or ways";
  unit.claims = [](const apps::ExperimentConfig& c) {
    return c.pipeline_stages > 1 || c.tensor_parallel > 1;
  };
  unit.replicas = [](const StrategyConfig& sc) {
    return apps::MakeGridShape(sc.job.ranks, sc.config.pipeline_stages, sc.config.tensor_parallel)
        .replicas;
  };
  unit.plan = [](const TrainerOptions& o, const JobShape& job) {
    const apps::GridShape& grid = o.model_parallel.grid;
    JobPlan plan;
    plan.shards = grid.replicas;
    for (int r = 0; r < job.ranks; ++r) {
      const apps::GridPlace at = apps::PlaceOf(grid, r);
      // Every rank of a replica reads the replica's shard; replica 0's ranks write their
      // parts of each checkpoint (SavePartitionedCheckpoint).
      plan.ranks.push_back({.shard = at.replica,
                            .writes_checkpoints = at.replica == 0,
                            .role = "replica " + std::to_string(at.replica) + " stage " +
                                    std::to_string(at.stage) + " way " + std::to_string(at.way)});
    }
    return plan;
  };
  unit.make = [](const StrategyEnv& env) -> std::unique_ptr<Strategy> {
    return std::make_unique<ModelParallelStrategy>(env);
  };
  return unit;
}

}  // namespace shardflow::train
