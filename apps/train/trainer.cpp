#include "apps/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/train/batch_inputs.hpp"
#include "apps/train/rank_states.hpp"
#include "comm/allreduce_shm.hpp"
#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "comm/gradient_reducer.hpp"
#include "core/check_mpi.hpp"
#include "core/logging.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"
#include "core/optim/clip.hpp"
#include "core/progress.hpp"
#include "core/trace.hpp"
#include "io/pipeline/step_count.hpp"

namespace shardflow::train {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void AllreduceDoubles(comm::Communicator& comm, double* values, int count) {
  SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm.raw()));
}

// Parameters and non-trainable buffers from rank 0 to every rank.
void BroadcastModel(comm::Communicator& comm, Sequential<float>& model) {
  comm::Broadcast(comm, model.arena().params(), static_cast<size_t>(model.arena().size()));
  for (const NamedTensor& b : model.Buffers()) {
    comm::Broadcast(comm, b.tensor->data<float>(), static_cast<size_t>(b.tensor->num_elements()));
  }
}

// Batch-norm running statistics are updated by each rank's own batches; average them so
// evaluation and checkpoints see one consistent model.
void AverageBuffers(comm::Communicator& comm, Sequential<float>& model) {
  for (const NamedTensor& b : model.Buffers()) {
    comm::Allreduce(
        comm, b.tensor->data<float>(), static_cast<size_t>(b.tensor->num_elements()),
        {.algorithm = comm::AllreduceAlgorithm::kMpi, .mode = comm::ReduceMode::kAverage});
  }
}

struct EvalResult {
  double loss = 0;      // mean loss per sample (reconstruct: mean squared error per sample)
  double accuracy = 0;  // classify only
  int64_t samples = 0;
};

// Every rank runs its shard once; sums are reduced exactly.
EvalResult Evaluate(comm::Communicator& comm, Sequential<float>& model, const TrainerOptions& o,
                    const BatchSpec& spec, const pipeline::Dataset& ds) {
  SF_TRACE_SCOPE("evaluate");
  AverageBuffers(comm, model);
  double sums[3] = {0, 0, 0};  // loss sum, correct, samples
  Tensor scratch;
  auto it = ds.MakeIterator();
  pipeline::Element batch;
  while (it.Next(&batch)) {
    ModelBatch mb = ToModelBatch(batch, spec, &scratch);
    if (mb.rows == 0) continue;
    Tensor out = model.Forward(mb.x, /*training=*/false);
    if (o.task == Task::kClassify) {
      sums[0] += SoftmaxCrossEntropy<float>(out, mb.labels, nullptr) * mb.rows;
      sums[1] += static_cast<double>(CountCorrect<float>(out, mb.labels));
    } else {
      sums[0] += SumReconstructionError<float>(out, mb.x);
    }
    sums[2] += static_cast<double>(mb.rows);
  }
  AllreduceDoubles(comm, sums, 3);
  EvalResult r;
  r.samples = static_cast<int64_t>(sums[2]);
  if (r.samples > 0) {
    r.loss = sums[0] / sums[2];
    r.accuracy = sums[1] / sums[2];
  }
  return r;
}

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path) {
    if (!path.empty()) {
      out_.open(path, std::ios::app);
      if (!out_) throw Error(ErrorCode::kIo, "cannot open metrics log", {.file = path});
    }
  }
  void Write(const nlohmann::json& line) {
    if (out_.is_open()) out_ << line.dump() << '\n' << std::flush;
  }

 private:
  std::ofstream out_;
};

// Test-only fault injection, for the process-level tests (tests/train/train_runs.sh):
// SHARDFLOW_TEST_FAULT=kill:R:S (or hang:R:S) makes rank R raise SIGKILL (or SIGSTOP) at the
// start of step S (0-based). Unset or empty: no fault. A malformed value is an error.
struct TestFault {
  int rank = -1;
  int64_t step = -1;
  int signal = 0;
};

TestFault ParseTestFault() {
  const char* env = std::getenv("SHARDFLOW_TEST_FAULT");
  if (env == nullptr || *env == '\0') return {};
  char kind[8] = {};
  int rank = -1;
  long long step = -1;
  char extra = 0;
  const int n = std::sscanf(env, "%7[a-z]:%d:%lld%c", kind, &rank, &step, &extra);
  const std::string k = kind;
  if (n != 3 || (k != "kill" && k != "hang") || rank < 0 || step < 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string("bad SHARDFLOW_TEST_FAULT '") + env +
                                                 "': expected kill:RANK:STEP or hang:RANK:STEP");
  }
  return {rank, step, k == "kill" ? SIGKILL : SIGSTOP};
}

}  // namespace

TrainResult RunTraining(MPI_Comm mpi_comm, const TrainerOptions& o, const TrainerInputs& inputs) {
  // Two communicators: the reducer's thread owns one, this thread uses the other.
  comm::CommunicatorOptions comm_options;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = o.watchdog_seconds};
  comm::Communicator grad_comm(mpi_comm, comm_options);
  comm::Communicator ctl(mpi_comm, comm_options);
  const int rank = ctl.rank();
  const int size = ctl.size();
  const bool chief = rank == 0;
  if (o.trace) StartTracing();

  Sequential<float> model(o.model_spec, o.input_shape, o.model);
  Arena<float>& arena = model.arena();
  std::unique_ptr<Optimizer> optimizer = MakeOptimizer(o.optimizer, arena.size());
  if (chief) SF_LOG(Info) << "model:\n" << model.Summary();

  // Resume or warm start, then make every replica identical.
  TrainingState state;
  state.seed = o.model.seed;
  std::string resumed_from;
  if (o.resume) {
    if (o.checkpoint.dir.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "--resume needs a checkpoint directory",
                  {.key = "checkpoint.dir"});
    }
    resumed_from = LoadLatestCheckpoint(o.checkpoint, model, optimizer.get(), &state);
    if (chief) {
      if (resumed_from.empty()) {
        SF_LOG(Warn) << "--resume: no checkpoint in " << o.checkpoint.dir << "; starting fresh";
      } else {
        SF_LOG(Info) << "resuming from " << resumed_from << " at step " << state.step;
      }
    }
  } else if (!o.warm_start.empty()) {
    LoadWeights(o.warm_start, model);
    if (chief) SF_LOG(Info) << "warm start: weights from " << o.warm_start;
  }
  BroadcastModel(ctl, model);

  // Equal steps per epoch on every rank.
  const BatchSpec spec{o.input_feature, o.task == Task::kClassify ? o.label_feature : "",
                       o.input_shape, o.input_scale};
  const pipeline::Dataset one_pass = inputs.train();
  const int64_t local_batches =
      inputs.local_batches ? inputs.local_batches() : pipeline::LocalBatchCount(one_pass);
  const int64_t steps_per_epoch = comm::AllreduceInt64(ctl, local_batches, comm::Int64Op::kMin);
  if (steps_per_epoch <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "some rank has no training batch (rank " + std::to_string(rank) + " has " +
                    std::to_string(local_batches) + "): too few records for " +
                    std::to_string(size) + " ranks",
                {.hint = "lower train.batch_size or use fewer ranks"});
  }
  const int64_t most = comm::AllreduceInt64(ctl, local_batches, comm::Int64Op::kMax);
  if (chief && most != steps_per_epoch) {
    SF_LOG(Info) << "ranks agree on " << steps_per_epoch << " steps per epoch (the longest shard "
                 << "has " << most << " batches; the rest is left out and counted)";
  }
  const int64_t planned_steps = steps_per_epoch * o.epochs;
  int64_t total_steps = planned_steps;
  if (o.max_steps > 0) total_steps = std::min(total_steps, o.max_steps);
  // A cosine schedule without total_steps runs over all the epochs, whatever max_steps says:
  // a run stopped by max_steps and resumed sees the same learning rate at every step as one
  // run through.
  LrScheduleOptions schedule = o.schedule;
  if (schedule.total_steps == 0)
    schedule.total_steps = std::max(planned_steps, schedule.warmup_steps + 1);
  ValidateLrSchedule(schedule);
  auto left_out = std::make_shared<pipeline::StepLimitReport>();
  const pipeline::Dataset train_ds =
      pipeline::LimitSteps(one_pass, steps_per_epoch, left_out).Repeat(o.epochs);
  pipeline::PipelineIterator it = train_ds.MakeIterator();
  int64_t step = 0;
  if (!resumed_from.empty()) {
    step = state.step;
    const std::string mine = RankStateFromBlob(state.iterator_state, rank, size);
    if (!mine.empty()) it.RestoreState(mine);
  }

  // The reducer starts each gradient bucket as soon as backprop has finished it.
  const std::vector<GradBucket> buckets =
      arena.Buckets(static_cast<size_t>(std::max(1.0, o.bucket_mb * (1 << 20))));
  std::vector<comm::GradientSlice> slices;
  for (const GradBucket& b : buckets) slices.push_back({b.offset, b.size});
  // All ranks on one node and the all-reduce left to auto (or shm): the gradients move into
  // shared memory and are reduced in place there, with no staging copies.
  std::unique_ptr<comm::SharedFloatBuffer> shared_grads;
  if (size > 1 && grad_comm.num_nodes() == 1 &&
      (o.allreduce.algorithm == comm::AllreduceAlgorithm::kAuto ||
       o.allreduce.algorithm == comm::AllreduceAlgorithm::kShm)) {
    // A node whose shared-memory file system is too small (a container's default /dev/shm)
    // refuses the window, on every rank alike: say so once and keep the gradients private.
    try {
      shared_grads =
          std::make_unique<comm::SharedFloatBuffer>(grad_comm, static_cast<size_t>(arena.size()));
      arena.UseGradStorage(shared_grads->data());
    } catch (const comm::ShmUnavailable& e) {
      if (chief) {
        SF_LOG(Warn) << "gradients stay in private memory and are staged for the all-reduce: "
                     << e.what();
      }
    }
  }
  comm::GradientReducer reducer(
      grad_comm, arena.grads(), slices,
      {.allreduce = o.allreduce, .overlap = o.overlap, .shared = shared_grads.get()});
  if (chief && size > 1) {
    std::string path = "in place in shared memory (shm, one node)";
    if (!shared_grads) {
      path = std::string(comm::AlgorithmName(o.allreduce.algorithm)) + ", wire " +
             comm::WireFormatName(o.allreduce.wire);
    }
    SF_LOG(Info) << "gradients: " << arena.size() << " floats in " << buckets.size()
                 << " bucket(s) of <= " << o.bucket_mb << " MiB, overlap "
                 << (o.overlap ? "on" : "off") << ", " << grad_comm.num_nodes()
                 << " node(s); all-reduce " << path;
  }
  GradReadyTracker tracker(
      buckets, [&](const GradBucket& b) { reducer.BucketReady(b.index); }, arena.specs());
  model.SetGradsReadyHook([&](int layer) { tracker.LayerDone(layer); });

  const std::string out_dir = o.output_dir;
  MetricsLog metrics(chief && !out_dir.empty() ? out_dir + "/metrics.jsonl" : "");
  auto save_checkpoint = [&](int64_t steps_done) {
    if (o.checkpoint.dir.empty()) return;
    SF_TRACE_SCOPE("checkpoint");
    AverageBuffers(ctl, model);
    const std::vector<uint8_t> states = GatherRankStates(it.SaveState(), ctl);
    if (chief) {
      TrainingState s;
      s.step = steps_done;
      s.epoch = steps_done / steps_per_epoch;
      s.seed = o.model.seed;
      s.iterator_state = states;
      s.config_text = o.config_text;
      const std::string path = SaveCheckpoint(o.checkpoint, model, optimizer.get(), s);
      SF_LOG(Info) << "checkpoint " << path;
    }
  };

  std::unique_ptr<ProgressReporter> progress;
  if (chief && o.progress) {
    progress = std::make_unique<ProgressReporter>(
        total_steps, ProgressOptions{.label = "train", .unit = "samples"});
    if (step > 0) progress->StartAt(step, 0);
  }

  TrainResult result;
  StepTimeTotals times;
  Tensor scratch, dout;
  double interval[3] = {0, 0, 0};  // loss sum, correct, samples (this rank, this interval)
  auto interval_start = Clock::now();
  double interval_wait = 0, interval_comm = 0;
  auto last_checkpoint = Clock::now();
  const auto loop_start = Clock::now();
  int64_t samples_seen = 0;
  pipeline::Element batch;
  const TestFault fault = ParseTestFault();
  for (; step < total_steps; ++step) {
    if (fault.rank == rank && fault.step == step) {
      SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank << " raises "
                   << (fault.signal == SIGKILL ? "SIGKILL" : "SIGSTOP") << " at step " << step;
      std::raise(fault.signal);
    }
    const auto t0 = Clock::now();
    {
      SF_TRACE_SCOPE("input");
      if (!it.Next(&batch)) {
        throw Error(ErrorCode::kInternal, "the input ended at step " + std::to_string(step) +
                                              " of " + std::to_string(total_steps));
      }
    }
    const double wait = Since(t0);
    const ModelBatch mb = ToModelBatch(batch, spec, &scratch);

    // A partial last batch weighs by its size: scale so the averaged gradient is the mean over
    // the global batch. Only the last step of an epoch can be partial, so only then do ranks
    // exchange batch sizes.
    double weight = 1.0;
    if ((step + 1) % steps_per_epoch == 0 && size > 1) {
      const int64_t global = comm::AllreduceInt64(ctl, mb.rows, comm::Int64Op::kSum);
      weight = global > 0 ? static_cast<double>(mb.rows) * size / static_cast<double>(global) : 0;
    }
    double loss = 0;
    int64_t correct = 0;
    {
      SF_TRACE_SCOPE("forward");
      model.set_step(static_cast<uint64_t>(step));
      const Tensor out = model.Forward(mb.x, /*training=*/true);
      if (o.task == Task::kClassify) {
        loss = SoftmaxCrossEntropy<float>(out, mb.labels, &dout);
        correct = CountCorrect<float>(out, mb.labels);
      } else {
        loss = MeanSquaredError<float>(out, mb.x, &dout);
      }
    }
    if (weight != 1.0) {
      float* d = dout.data<float>();
      const int64_t n = dout.num_elements();
      for (int64_t i = 0; i < n; ++i) d[i] *= static_cast<float>(weight);
    }
    {
      SF_TRACE_SCOPE("backward");
      arena.ZeroGrads();
      tracker.Reset();
      model.Backward(dout);
    }
    double blocked = 0;
    {
      SF_TRACE_SCOPE("allreduce_wait");
      blocked = reducer.Finish();
    }
    {
      SF_TRACE_SCOPE("update");
      if (o.clip_norm > 0) ClipByGlobalNorm(arena.grads(), arena.size(), o.clip_norm);
      optimizer->Step(arena, LearningRate(schedule, step));
    }
    const double step_seconds = Since(t0);
    times.input_wait_s += wait;
    times.comm_s += blocked;
    times.compute_s += std::max(0.0, step_seconds - wait - blocked);
    interval_wait += wait;
    interval_comm += blocked;
    interval[0] += loss * static_cast<double>(mb.rows);
    interval[1] += static_cast<double>(correct);
    interval[2] += static_cast<double>(mb.rows);
    samples_seen += mb.rows;
    result.step_losses.push_back(loss);
    result.final_train_loss = loss;

    const bool last = step + 1 == total_steps;
    const bool epoch_end = (step + 1) % steps_per_epoch == 0;
    if ((o.log_every_steps > 0 && (step + 1) % o.log_every_steps == 0) || epoch_end || last) {
      double sums[3] = {interval[0], interval[1], interval[2]};
      AllreduceDoubles(ctl, sums, 3);
      const double seconds = Since(interval_start);
      nlohmann::json line = {{"step", step + 1},
                             {"epoch", step / steps_per_epoch},
                             {"loss", sums[2] > 0 ? sums[0] / sums[2] : 0.0},
                             {"samples_per_s", seconds > 0 ? sums[2] / seconds : 0.0},
                             {"input_wait_fraction", seconds > 0 ? interval_wait / seconds : 0.0},
                             {"allreduce_s", interval_comm},
                             {"lr", LearningRate(schedule, step)}};
      if (o.task == Task::kClassify && sums[2] > 0) line["accuracy"] = sums[1] / sums[2];
      metrics.Write(line);
      if (progress) {
        progress->SetMetric("loss", line["loss"].get<double>());
        if (line.contains("accuracy")) progress->SetMetric("acc", line["accuracy"].get<double>());
      }
      interval[0] = interval[1] = interval[2] = 0;
      interval_wait = interval_comm = 0;
      interval_start = Clock::now();
      // Time-based checkpoints: rank 0 decides, everyone follows (the save is collective).
      int64_t due = chief && o.checkpoint_every_minutes > 0 &&
                    Since(last_checkpoint) >= 60 * o.checkpoint_every_minutes;
      due = comm::AllreduceInt64(ctl, due, comm::Int64Op::kMax);
      if (due && !last) {
        save_checkpoint(step + 1);
        last_checkpoint = Clock::now();
      }
    }
    if (o.checkpoint_every_steps > 0 && (step + 1) % o.checkpoint_every_steps == 0 && !last) {
      save_checkpoint(step + 1);
      last_checkpoint = Clock::now();
    }
    if (epoch_end && !last && inputs.eval) {
      const EvalResult e = Evaluate(ctl, model, o, spec, inputs.eval());
      if (chief) {
        SF_LOG(Info) << "epoch " << (step + 1) / steps_per_epoch << ": eval loss " << e.loss
                     << (o.task == Task::kClassify ? ", accuracy " + std::to_string(e.accuracy)
                                                   : std::string());
      }
      metrics.Write({{"step", step + 1},
                     {"epoch", step / steps_per_epoch},
                     {"eval_loss", e.loss},
                     {"eval_accuracy", e.accuracy}});
    }
    if (progress) progress->Advance(1, static_cast<double>(mb.rows) * size);
  }
  times.wall_s = Since(loop_start);
  if (progress) progress->Finish();

  // Final evaluation and checkpoint.
  RunSummary& s = result.summary;
  if (inputs.eval) {
    const EvalResult e = Evaluate(ctl, model, o, spec, inputs.eval());
    if (o.task == Task::kClassify) {
      s.test_accuracy = e.accuracy;
    }
    s.test_loss = e.loss;
  }
  save_checkpoint(step);

  // Where the time went: the slowest rank's wall time, the mean of the parts.
  double parts[4] = {times.input_wait_s, times.compute_s, times.comm_s,
                     static_cast<double>(samples_seen)};
  AllreduceDoubles(ctl, parts, 4);
  double wall = times.wall_s;
  SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, ctl.raw()));
  s.times = {.wall_s = wall,
             .input_wait_s = parts[0] / size,
             .compute_s = parts[1] / size,
             .comm_s = parts[2] / size};
  s.ranks = size;
  s.per_rank_batch = o.per_rank_batch;
  s.global_batch = o.per_rank_batch * size;
  s.steps = step;
  s.epochs = (step + steps_per_epoch - 1) / steps_per_epoch;
  s.samples = static_cast<int64_t>(parts[3]);
  s.samples_per_s = wall > 0 ? parts[3] / wall : 0;
  s.verdict = Diagnose(s.times, o.tuning);
  if (left_out->batches_left_out > 0) {
    SF_LOG(Info) << "equal steps left out " << left_out->batches_left_out.load() << " batches ("
                 << left_out->elements_left_out.load() << " samples) on this rank";
  }
  result.params.assign(arena.params(), arena.params() + arena.size());
  if (o.trace && !out_dir.empty()) {
    StopTracing();
    WriteTrace(RankTracePath(out_dir + "/trace.json", rank), {.pid = rank});
  }
  return result;
}

}  // namespace shardflow::train
