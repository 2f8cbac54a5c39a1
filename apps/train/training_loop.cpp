// The training loop: input, steps, metrics, checkpoints, evaluation and the report, for any
// Strategy (strategy.hpp). Read TrainingLoop::Run first; each step is RunStep, and what
// happens between steps (metrics lines, checkpoints, evaluation at epoch ends) is AfterStep.
// Dynamic sharding's loop is dynamic_loop.cpp.
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "apps/train/peak_probe.hpp"
#include "apps/train/run_trace.hpp"
#include "apps/train/training_loop.hpp"

#include <cmath>
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/precision/precision.hpp"
#include "core/stop_signal.hpp"
#include "core/trace.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::train {
namespace detail {

TrainResult TrainingLoop::Run() {
  const StartPoint start = strategy_.Setup();
  if (!strategy_.trains_batches()) {  // a server: serves until the training ranks are done
    if (comm::AllreduceInt64(job_, 0, comm::ReduceOp::kMax) != 0) {  // nothing left to train
      result_.already_complete = true;
      return result_;
    }
    strategy_.Serve();
    Summarize(0);  // its times count as nothing (the training ranks' wall time is the run's)
    if (o_.final_params) result_.params = strategy_.FinalParams();
    return result_;
  }
  if (strategy_.step_comm() != nullptr) steps_ = strategy_.step_comm();
  if (o_.dynamic_sharding) return RunDynamic(start);
  plan_ = PlanSteps(
      *steps_, o_,
      inputs_.local_batches ? inputs_.local_batches() : pipeline::LocalBatchCount(inputs_.train()));
  map_.steps_per_epoch = plan_.steps_per_epoch;
  OpenInput(start);
  FinishPlan(o_, map_, &plan_);
  if (AlreadyComplete(start, start.step)) return result_;
  OpenOutputs(start.step);
  const auto loop_start = Clock::now();
  int64_t step = start.step;
  for (; step < plan_.total_steps; ++step) {
    fault::At(fault::Point::kStepStart, {.rank = job_.rank(), .index = step});
    RunStep(step);
    AfterStep(step);
    if (stop_early_) {  // every rank alike: the evaluation is the same on every rank
      ++step;
      break;
    }
    if (StopAfter(step + 1) == step + 1 && step + 1 < plan_.total_steps) {
      times_.wall_s = Since(loop_start);
      Stop(step + 1);
      return result_;
    }
  }
  FinishRun(step, loop_start);
  return result_;
}

bool TrainingLoop::AlreadyComplete(const StartPoint& start, int64_t from) {
  const bool complete = start.step > 0 && from >= plan_.total_steps;
  // Every rank of the job learns it, the ranks that serve included (they wait here).
  if (comm::AllreduceInt64(job_, complete ? 1 : 0, comm::ReduceOp::kMax) == 0) return false;
  // A finished run resumed: nothing to train, and its outputs stay as they are.
  if (chief()) {
    SF_LOG(Info) << "--resume: the run is complete (step " << from << " of " << plan_.total_steps
                 << "); nothing to do, outputs unchanged";
  }
  result_.already_complete = true;
  return true;
}

// Metrics, progress, TensorBoard, test faults and the stall inspector, from step `from` on.
void TrainingLoop::OpenOutputs(int64_t from) {
  metrics_ = std::make_unique<MetricsLog>(
      chief() && !o_.output_dir.empty() ? o_.output_dir + "/metrics.jsonl" : "", from);
  if (chief() && o_.progress) {
    progress_ = std::make_unique<ProgressReporter>(
        plan_.total_steps, ProgressOptions{.label = "train", .unit = "samples"});
    if (from > 0) progress_->StartAt(from, 0);
  }
  if (chief() && o_.tensorboard && !o_.output_dir.empty()) {
    tb_ = std::make_unique<TensorBoardLog>(o_.output_dir + "/tb", from);
  }
  fault::CheckEnvironment();  // a malformed SHARDFLOW_TEST_* value: refused before any step
  if (o_.early_stopping.on()) early_ = std::make_unique<EarlyStopping>(o_.early_stopping);
  if (o_.stall.factor > 0) {
    stall_ = std::make_unique<StallInspector>(input_ ? &input_->stats() : nullptr, o_.stall,
                                              job_.rank());
  }
  previous_end_ = Clock::now();
  first_step_ = from;
  logged_step_ = progress_step_ = from;
}

void TrainingLoop::FinishRun(int64_t step, Clock::time_point loop_start) {
  times_.wall_s = Since(loop_start);
  if (progress_) progress_->Finish();
  if (inputs_.eval) {
    const EvalResult e = Evaluate(step - 1, /*final=*/true);
    if (o_.task == Task::kClassify) result_.summary.test_accuracy = e.accuracy;
    result_.summary.test_loss = e.loss;
    if (e.auc && !std::isnan(*e.auc)) result_.summary.test_auc = *e.auc;
  }
  SaveCheckpoint(step);
  strategy_.Finish();
  Summarize(step);
  if (o_.final_params) result_.params = strategy_.FinalParams();
}

// This rank's input from where the run starts: fresh, resumed (its saved input: the epoch map,
// the remainder's records while in one, the pipeline's state), or resumed onto another rank
// count (rank_input.hpp: every old rank's saved input, replayed to what it had left).
void TrainingLoop::OpenInput(const StartPoint& start) {
  std::vector<int64_t> ids;
  SavedInput saved;
  const std::string& any_state =
      start.elastic_states.empty() ? start.iterator_state : start.elastic_states.front();
  int64_t fence = 0, records = 0, batch = 0;
  if (!any_state.empty() &&
      DecodeDynamicState(DecodeSavedInput(any_state).pipeline, &fence, &records, &batch)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the checkpoint at step " + std::to_string(start.step) +
                    " was written with dist.sharding = dynamic",
                {.key = "dist.sharding", .hint = "resume with dist.sharding = dynamic"});
  }
  if (!start.elastic_states.empty()) {
    if (!inputs_.factories.regular || !inputs_.factories.records) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the checkpoint was written by " + std::to_string(start.elastic_states.size()) +
                      " ranks; resuming on " + std::to_string(steps_->size()) +
                      " reads records by their offsets, which needs data.format = tfrecord, "
                      "hdf5, csv, jsonl or text (uncompressed)",
                  {.key = "data.format", .hint = "resume on the checkpoint's rank count"});
    }
    // Model parallel: the replicas are groups of ranks that read alike; each rank replays every
    // old replica's rest itself (no communicator of one rank per replica to share it over).
    const int replica = strategy_.data_replica();
    const int world = strategy_.data_parallel_size();
    const std::vector<int64_t> batches = ReplicaBatches(o_, world);
    ElasticStart e = PlanElasticResume(
        inputs_.factories, start.elastic_states, start.step, replica < 0 ? steps_->rank() : replica,
        batches, o_.global_batch, o_.lr_scaled_by_ranks, plan_.steps_per_epoch,
        replica < 0 ? steps_ : nullptr, replica < 0 ? "ranks" : "data replicas");
    if (chief()) SF_LOG(Warn) << e.summary;
    map_ = e.map;
    ids = std::move(e.ids);
    lr_scale_ = e.lr_scale;
    RestoreMetricSums(e.epoch_sums, chief() ? e.interval_sums : std::array<double, 3>{});
  } else if (!start.iterator_state.empty()) {
    saved = DecodeSavedInput(start.iterator_state);
    if (saved.world > 0) {
      if (saved.map.steps_per_epoch != plan_.steps_per_epoch) {
        throw Error(ErrorCode::kInvalidArgument,
                    "the checkpoint's input plan has " + std::to_string(saved.map.steps_per_epoch) +
                        " steps per epoch, this run's " + std::to_string(plan_.steps_per_epoch) +
                        ": the data files changed since the checkpoint",
                    {.key = "data.files"});
      }
      map_ = saved.map;
      lr_scale_ = saved.lr_scale;
      if (saved.in_remainder) ids = saved.remainder_ids;
      RestoreMetricSums(saved.epoch_sums, saved.interval_sums);
    }
  }
  input_ = std::make_unique<RankInput>(inputs_.factories, inputs_.train(), map_, start.step,
                                       std::move(ids), o_.per_rank_batch, left_out_);
  input_->Restore(start.step, saved.in_remainder, saved.pipeline);
}

// After `steps_done` steps: the step count at which a stop signal ends the run, or -1. Ranks
// that step together agree every step without waiting: a non-blocking MAX of the flag posted
// after each step is completed after the next one (by then every rank has posted it, so the
// wait is nil), and a signal on any rank stops all after that same step. Asynchronous
// parameter-server workers never wait for each other, and their collectives (checkpoints,
// evaluations) come at fixed step counts, so they must stop at one step count too: a signalled
// worker asks the first server, which sees every worker's pulls and picks a count every worker
// can still reach (parameter_server.cpp); each learns it from its next pull.
int64_t TrainingLoop::StopAfter(int64_t steps_done) {
  if (stop_at_ >= 0) return stop_at_;
  if (strategy_.synchronous_metrics()) {
    if (stop_round_.pending() && stop_round_.Finish() != 0) return stop_at_ = steps_done;
    if (steps_done < plan_.total_steps) {
      stop_round_.Start(*steps_, StopSignal() != 0 ? 1 : 0, comm::ReduceOp::kMax);
    }
  } else {
    if (StopSignal() != 0) strategy_.RequestStop();
    stop_at_ = strategy_.StopTarget();
    if (stop_at_ >= 0 && stop_at_ < steps_done) {
      throw Error(ErrorCode::kInternal, "the agreed stop after step " + std::to_string(stop_at_) +
                                            " came after step " + std::to_string(steps_done));
    }
  }
  return stop_at_;
}

// A stop signal: the checkpoint of `steps_done` steps (every rank's input position), the
// servers released, the report; no final evaluation (the grace time is short).
void TrainingLoop::Stop(int64_t steps_done) {
  if (progress_) progress_->Finish();
  if (chief()) {
    SF_LOG(Warn) << "stop signal ("
                 << (StopSignal() != 0 ? StopSignalName(StopSignal()) : "on a peer")
                 << "): stopping after step " << steps_done << " of " << plan_.total_steps
                 << "; writing a checkpoint";
  }
  SaveCheckpoint(steps_done);
  strategy_.Finish();
  metrics_->Write({{"step", steps_done},
                   {"epoch", map_.EpochOf(steps_done - 1)},
                   {"stopped", StopSignal() != 0 ? StopSignalName(StopSignal()) : "peer"}});
  result_.stopped = true;
  result_.stop_signal = StopSignal();
  Summarize(steps_done);
}

void TrainingLoop::RunStep(int64_t step) {
  const auto t0 = Clock::now();
  {
    SF_TRACE_SCOPE("input");
    if (stall_) stall_->InputBegin(step);
    fault::At(fault::Point::kBeforeBatch, {.rank = job_.rank(), .index = step});
    if (!input_->Next(step, &batch_)) {
      throw Error(ErrorCode::kDataLoss,
                  "this rank's input ended at step " + std::to_string(step) + " of " +
                      std::to_string(plan_.total_steps) +
                      ", short of the batches counted at the start: a data file changed or "
                      "was truncated during the run",
                  {.hint = "restore the files; --resume continues from the last checkpoint"});
    }
  }
  if (stall_) stall_->InputEnd();
  TraceInputQueues(input_->stats());
  TrainBatch(step, t0, map_.EpochEnd(step));
}

void TrainingLoop::TrainBatch(int64_t step, Clock::time_point t0, bool epoch_end) {
  const double wait = Since(t0);
  if (strategy_.counts_samples() && fault::Armed(fault::Point::kBatchTaken)) {
    LogRowIds(steps_->rank(), map_.EpochOf(step), step, batch_);
  }
  if (!device_input_ && o_.model.device != Device::kCpu) {
    device_input_ = std::make_unique<DeviceInput>(o_.model.device, spec_);
  }
  const ModelBatch mb =
      device_input_ ? device_input_->Take(batch_) : ToModelBatch(batch_, spec_, &scratch_);
  // The next batch onto the device while this step computes, when the pipeline already holds
  // it (peeked, not consumed: a checkpoint still sees it in the pipeline). The strategy runs
  // it once backprop is issued, so the host's conversion overlaps the device's work.
  bool staged = false;
  std::function<void()> stage_next;
  if (device_input_ && o_.device_prefetch && input_ && !dynamic_ && step + 1 < plan_.total_steps) {
    stage_next = [this, step, &staged] {
      if (staged) return;
      staged = true;
      if (input_->Peek(step + 1, &peeked_)) device_input_->Prefetch(peeked_);
      peeked_ = pipeline::Element();
    };
  }
  const StepOutput out = strategy_.TrainStep({.batch = &mb,
                                              .step = step,
                                              .epoch = map_.EpochOf(step),
                                              .epoch_end = epoch_end,
                                              .learning_rate = Lr(step),
                                              .while_device_busy = stage_next});
  if (stage_next) stage_next();  // a strategy that did not call it
  if (device_input_) device_input_->StepIssued();
  const double step_seconds = Since(t0);
  // When this rank reached the all-reduce, from the end of its previous step (the first step of
  // a run starts from set-up, which ranks leave at different times: not recorded).
  if (step > first_step_) {
    const double between_steps = std::chrono::duration<double>(t0 - previous_end_).count();
    arrivals_.Record(between_steps + step_seconds - out.comm_blocked_s, wait);
  }
  const Clock::time_point end = Clock::now();
  if (tb_) {
    tb_->Step(step + 1, out, Lr(step),
              static_cast<double>(mb.rows * strategy_.data_parallel_size()),
              std::chrono::duration<double>(end - previous_end_).count(), wait);
  }
  previous_end_ = end;
  if (stall_) stall_->StepEnd(step_seconds);
  times_.input_wait_s += wait;
  times_.comm_s += out.comm_blocked_s;
  times_.compute_s += std::max(0.0, step_seconds - wait - out.comm_blocked_s);
  interval_.wait_s += wait;
  interval_.comm_s += out.comm_blocked_s;
  interval_.loss_sum += out.loss_sum;
  interval_.correct += static_cast<double>(out.correct);
  interval_.rows += static_cast<double>(out.rows);
  samples_seen_ += strategy_.counts_samples() ? mb.rows : 0;
  skipped_steps_ += out.skipped ? 1 : 0;
  result_.step_losses.push_back(out.loss);
  result_.final_train_loss = out.loss;
  if (progress_) {  // dynamic sharding: this worker's steps are not every step
    const int64_t advance = dynamic_ ? std::max<int64_t>(0, step + 1 - progress_step_) : 1;
    progress_step_ = std::max(progress_step_, step + 1);
    progress_->Advance(advance, static_cast<double>(mb.rows) * strategy_.data_parallel_size());
  }
}

void TrainingLoop::AfterStep(int64_t step) {
  const bool last = step + 1 == plan_.total_steps;
  const bool epoch_end = map_.EpochEnd(step);
  const bool interval_end =
      (o_.log_every_steps > 0 && (step + 1) % o_.log_every_steps == 0) || epoch_end || last;
  if (interval_end) LogInterval(step);
  if (tb_) tb_->Histograms(step + 1, strategy_.replica_model(), o_.histogram_every);
  const bool saved = !last && MaybeCheckpoint(step, interval_end);
  if (epoch_end && !last && inputs_.eval) {
    const EvalResult e = Evaluate(step, /*final=*/false);
    if (early_) WatchEarlyStopping(step, e, saved);
  }
}

void TrainingLoop::WatchEarlyStopping(int64_t step, const EvalResult& e, bool saved) {
  const EarlyStoppingOptions& o = early_->options();
  switch (early_->Observe(step + 1, e.loss, e.accuracy, e.auc)) {
    case EarlyStopping::Verdict::kImproved:
      if (!saved) SaveCheckpoint(step + 1);  // the best is always a checkpoint
      KeepBestCheckpoint(step + 1);
      break;
    case EarlyStopping::Verdict::kWaiting:
      break;
    case EarlyStopping::Verdict::kStop:
      stop_early_ = true;
      if (chief()) {
        SF_LOG(Info) << "early stopping after epoch " << map_.EpochOf(step) + 1 << ": " << o.metric
                     << " has not improved for " << o.patience << " evaluation(s); the best, "
                     << early_->best() << " after step " << early_->best_step() << ", is "
                     << (o_.output_dir.empty() ? "its checkpoint" : o_.output_dir + "/best.h5");
      }
      metrics_->Write({{"step", step + 1},
                       {"epoch", map_.EpochOf(step)},
                       {"early_stop", true},
                       {"best_step", early_->best_step()},
                       {o.metric, early_->best()}});
      break;
  }
}

// Rank 0: OUTPUT/best.h5 becomes the newest checkpoint (written after `steps_done` steps): a
// hard link, which keep_last's pruning of the original cannot remove, or a copy across file
// systems.
void TrainingLoop::KeepBestCheckpoint(int64_t steps_done) {
  namespace fs = std::filesystem;
  if (!chief() || o_.output_dir.empty() || o_.checkpoint.dir.empty()) return;
  const std::vector<std::string> files = ListCheckpoints(o_.checkpoint);
  if (files.empty()) return;
  const std::string best = o_.output_dir + "/best.h5", tmp = best + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(files.back(), tmp, ec);
  if (ec) fs::copy_file(files.back(), tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, best);
  SF_LOG(Info) << early_->options().metric << " " << early_->best() << " after step " << steps_done
               << " is the best so far: kept as " << best;
}

void TrainingLoop::LogInterval(int64_t step) {
  double sums[3] = {interval_.loss_sum, interval_.correct, interval_.rows};
  // Asynchronous ranks do not meet every interval: rank 0 logs its own figures.
  if (strategy_.synchronous_metrics())
    comm::AllreduceDoubles(*steps_, sums, 3, comm::ReduceOp::kSum);
  const double seconds = Since(interval_.start);
  logged_step_ = step + 1;
  nlohmann::json line = {
      {"step", step + 1},
      {"epoch", map_.EpochOf(step)},
      {"loss", sums[2] > 0 ? sums[0] / sums[2] : 0.0},
      {"samples_per_s", seconds > 0 ? sums[2] / seconds : 0.0},
      {"input_wait_fraction", seconds > 0 ? interval_.wait_s / seconds : 0.0},
      {"compute_fraction",
       seconds > 0 ? std::max(0.0, seconds - interval_.wait_s - interval_.comm_s) / seconds : 0.0},
      {"comm_fraction", seconds > 0 ? interval_.comm_s / seconds : 0.0},
      {"allreduce_s", interval_.comm_s},
      {"lr", Lr(step)},
      {"skipped_steps", skipped_steps_}};
  if (map_.EpochEnd(step)) {
    line["batches_left_out"] = plan_.batches_left_out_per_epoch;  // in the epoch just ended
  }
  if (o_.task == Task::kClassify && sums[2] > 0) line["accuracy"] = sums[1] / sums[2];
  for (int i = 0; i < 3; ++i) epoch_sums_[i] += sums[i];
  if (map_.EpochEnd(step) && epoch_sums_[2] > 0) {  // the epoch's means, as Keras reports them
    line["epoch_loss"] = epoch_sums_[0] / epoch_sums_[2];
    if (o_.task == Task::kClassify) line["epoch_accuracy"] = epoch_sums_[1] / epoch_sums_[2];
  }
  metrics_->Write(line);
  if (tb_) {
    tb_->Interval(line, map_.EpochEnd(step) ? epoch_sums_.data() : nullptr,
                  o_.task == Task::kClassify);
  }
  if (map_.EpochEnd(step)) {
    if (chief() && epoch_sums_[2] > 0) {  // the epoch's training loss, as Keras prints it
      SF_LOG(Info) << "epoch " << map_.EpochOf(step) + 1 << ": train loss "
                   << epoch_sums_[0] / epoch_sums_[2]
                   << (o_.task == Task::kClassify
                           ? ", accuracy " + std::to_string(epoch_sums_[1] / epoch_sums_[2])
                           : std::string())
                   << (strategy_.synchronous_metrics() ? "" : " (rank 0's own batches)");
    }
    epoch_sums_ = {};
  }
  if (progress_) {
    progress_->SetMetric("loss", line["loss"].get<double>());
    if (line.contains("accuracy")) progress_->SetMetric("acc", line["accuracy"].get<double>());
  }
  interval_ = Interval{};
}

// Step-based checkpoints every checkpoint_every_steps, epoch-based ones at the end of every
// checkpoint_every_epochs-th epoch; time-based ones are checked at the end of each metrics
// interval: rank 0 decides, everyone follows (the save is collective).
bool TrainingLoop::MaybeCheckpoint(int64_t step, bool interval_end) {
  bool due = o_.checkpoint_every_steps > 0 && (step + 1) % o_.checkpoint_every_steps == 0;
  due = due || (o_.checkpoint_every_epochs > 0 && map_.EpochEnd(step) &&
                (map_.EpochOf(step) + 1) % o_.checkpoint_every_epochs == 0);
  if (interval_end && o_.checkpoint_every_seconds > 0) {
    const int64_t late = chief() && Since(last_checkpoint_) >= o_.checkpoint_every_seconds;
    due = due || comm::AllreduceInt64(*steps_, late, comm::ReduceOp::kMax) != 0;
  }
  if (!due) return false;
  SaveCheckpoint(step + 1);
  last_checkpoint_ = Clock::now();
  return true;
}

// Rank 0 writes while the others go on to the next collective and wait there: marked busy, so
// their watchdogs wait on it however long the write takes (comm/watchdog.hpp).
void TrainingLoop::SaveCheckpoint(int64_t steps_done) {
  const comm::BusyScope busy;
  fault::At(fault::Point::kBeforeCheckpoint, {.rank = job_.rank()});
  strategy_.SaveCheckpoint(steps_done, plan_.steps_per_epoch, InputState(steps_done));
}

void TrainingLoop::RestoreMetricSums(const std::array<double, 3>& epoch,
                                     const std::array<double, 3>& interval) {
  epoch_sums_ = epoch;
  interval_.loss_sum = interval[0];
  interval_.correct = interval[1];
  interval_.rows = interval[2];
}

// What a checkpoint keeps of this rank's input (rank_input.hpp; dynamic sharding: the fence).
std::string TrainingLoop::InputState(int64_t steps_done) {
  if (!dynamic_) {
    SavedInput saved = input_->Save(steps_done, strategy_.data_parallel_size(), lr_scale_);
    saved.epoch_sums = epoch_sums_;
    saved.interval_sums = {interval_.loss_sum, interval_.correct, interval_.rows};
    return EncodeSavedInput(saved);
  }
  SavedInput saved;
  saved.world = strategy_.data_parallel_size();
  saved.per_rank_batch = dynamic_->plan().batch;
  saved.lr_scale = lr_scale_;
  saved.map = map_;
  saved.pipeline = EncodeDynamicState(dynamic_->fence(), dynamic_->plan());
  return EncodeSavedInput(saved);
}

// Evaluation after `step` (0-based): at an epoch end, and once more after the last step (a
// line in metrics.jsonl either way, the last one marked "final").
EvalResult TrainingLoop::Evaluate(int64_t step, bool final) {
  const EvalResult e = [this] {
    const comm::BusyScope busy;  // ranks with more evaluation data are waited for
    return strategy_.Evaluate(inputs_.eval());
  }();
  if (chief()) {
    SF_LOG(Info) << (final ? "final" : "epoch " + std::to_string(map_.EpochOf(step) + 1))
                 << ": eval loss " << e.loss
                 << (o_.task == Task::kClassify ? ", accuracy " + std::to_string(e.accuracy)
                                                : std::string())
                 << (e.auc ? ", AUC " + std::to_string(*e.auc) : std::string());
  }
  nlohmann::json line = {{"step", step + 1},
                         {"epoch", map_.EpochOf(step)},
                         {"eval_loss", e.loss},
                         {"eval_accuracy", e.accuracy}};
  if (e.auc) line["eval_auc"] = std::isnan(*e.auc) ? nlohmann::json() : nlohmann::json(*e.auc);
  if (final) line["final"] = true;
  metrics_->Write(line);
  if (tb_) {
    tb_->Evaluation(step + 1, e.loss, o_.task == Task::kClassify ? e.accuracy : -1.0,
                    e.auc.value_or(-1.0));
  }
  return e;
}

// A model on a device: its input staging and the device's times, means over the ranks that
// had one (collective over the job: every rank adds its part, or zeros).
void TrainingLoop::SummarizeDeviceInput(double wall) {
  double parts[7] = {0, 0, 0, 0, 0, 0, 0};
  if (device_input_) {
    const DeviceInputStats& d = device_input_->stats();
    const StagingTimes t = DeviceStagingFor(o_.model.device).TakeTimes();
    parts[0] = 1;
    parts[1] = static_cast<double>(d.batches);
    parts[2] = static_cast<double>(d.overlapped);
    parts[3] = d.stage_s;
    parts[4] = t.measured ? 1 : 0;
    parts[5] = t.compute_stall_s;
    parts[6] = t.compute_active_s;
  }
  comm::AllreduceDoubles(job_, parts, 7, comm::ReduceOp::kSum);
  if (parts[0] == 0) return;
  DeviceInputFigures& f = result_.summary.device_input;
  f.present = true;
  f.batches = static_cast<int64_t>(parts[1]);
  f.overlapped = static_cast<int64_t>(parts[2]);
  f.stage_s = parts[3] / parts[0];
  f.timed = parts[4] == parts[0];
  f.h2d_stall_s = parts[5] / parts[0];
  f.busy_fraction = wall > 0 ? parts[6] / parts[0] / wall : 0;
}

// Where the time went: the slowest rank's wall time, the mean of the parts.
void TrainingLoop::Summarize(int64_t steps) {
  // Over every rank; the parts are means over the ranks that take batches (a server adds 0).
  double parts[6] = {times_.input_wait_s,
                     times_.compute_s,
                     times_.comm_s,
                     static_cast<double>(samples_seen_),
                     strategy_.trains_batches() ? 1.0 : 0.0,
                     times_.wall_s > 0 ? static_cast<double>(samples_seen_) / times_.wall_s : 0.0};
  comm::AllreduceDoubles(job_, parts, 6, comm::ReduceOp::kSum);
  // The servers of a parameter-server job learn here that the workers stopped on a signal.
  result_.stopped = comm::AllreduceInt64(job_, result_.stopped ? 1 : 0, comm::ReduceOp::kMax) != 0;
  const double size = std::max(1.0, parts[4]);
  const double wall = comm::AllreduceDouble(job_, times_.wall_s, comm::ReduceOp::kMax);
  steps = comm::AllreduceInt64(job_, steps, comm::ReduceOp::kMax);
  const int64_t epochs = comm::AllreduceInt64(
      job_, strategy_.trains_batches() && steps > 0 ? map_.EpochOf(steps - 1) + 1 : 0,
      comm::ReduceOp::kMax);
  RunSummary& s = result_.summary;
  s.times = {.wall_s = wall,
             .input_wait_s = parts[0] / size,
             .compute_s = parts[1] / size,
             .comm_s = parts[2] / size};
  s.ranks = job_.size();
  s.per_rank_batch = o_.per_rank_batch;
  const std::vector<int64_t> batches = ReplicaBatches(o_, strategy_.data_parallel_size());
  s.global_batch = std::accumulate(batches.begin(), batches.end(), int64_t{0});
  s.steps = steps;
  s.skipped_steps = skipped_steps_;
  s.batches_per_epoch = plan_.batches_per_epoch;
  s.batches_left_out_per_epoch = plan_.batches_left_out_per_epoch;
  s.skipped_records = JobSkippedRecords(job_, o_);
  s.epochs = epochs;
  s.samples = static_cast<int64_t>(parts[3]);
  s.samples_per_s = wall > 0 ? parts[3] / wall : 0;
  s.aggregate_samples_per_s = parts[5];
  TuningContext tuning = o_.tuning;
  tuning.comm = strategy_.comm_profile();
  s.verdict = Diagnose(s.times, tuning);
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss in KiB on Linux
  for (int64_t kib : comm::AllgatherInt64(job_, static_cast<int64_t>(usage.ru_maxrss))) {
    s.peak_rss_mib.push_back(static_cast<double>(kib) / 1024.0);
  }
  const Sequential<float>* model = strategy_.replica_model();
  const Device device = model != nullptr ? model->arena().device() : o_.model.device;
  const int64_t device_bytes =
      device == Device::kCpu ? 0 : static_cast<int64_t>(DeviceMemoryFor(device).PeakBytes());
  const std::vector<int64_t> device_peaks = comm::AllgatherInt64(job_, device_bytes);
  if (std::any_of(device_peaks.begin(), device_peaks.end(), [](int64_t b) { return b > 0; })) {
    for (int64_t b : device_peaks) s.device_peak_mib.push_back(static_cast<double>(b) / (1 << 20));
  }
  SummarizeDeviceInput(wall);
  // Batches shorter than the model's context (shorter_sequences) do less than FlopsPerSample
  // says: no figure rather than an overstated one.
  if (model != nullptr && !o_.shorter_sequences) {
    s.model_gflops_per_s =
        3.0 * static_cast<double>(model->FlopsPerSample()) * s.samples_per_s / 1e9;
  }
  s.peak_gflops_per_s =
      JobPeakGemmRate(job_, o_.peak_probe, wall, model != nullptr && device == Device::kCpu);
  s.precision = InstalledPrecision(device);
  if (const PrecisionSpec* p = FindPrecision(s.precision)) s.precision_kernels = p->kernels(device);
  strategy_.FinishReport(&s);
  // Which rank the others waited for: ranks that meet every step (not asynchronous workers).
  if (strategy_.trains_batches() && strategy_.synchronous_metrics()) {
    s.straggler = arrivals_.Gather(*steps_, inputs_.shard_size);
    s.straggler.waited_at = strategy_.comm_profile().waits_for;
  }
  if (left_out_->batches_left_out > 0) {
    SF_LOG(Info) << "equal steps left out " << left_out_->batches_left_out.load() << " batches ("
                 << left_out_->elements_left_out.load() << " samples) on this rank";
  }
}

}  // namespace detail

TrainResult RunTraining(const comm::Communicator& job, const TrainerOptions& o,
                        const TrainerInputs& inputs, const StrategyFactory& factory) {
  comm::CommunicatorOptions comm_options;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = o.watchdog_seconds};
  comm::Communicator ctl(job.raw(), comm_options);
  RunTrace trace(ctl, o.trace, o.output_dir);
  const StrategyEnv env{.job = &job, .ctl = &ctl, .options = &o};
  std::unique_ptr<Strategy> strategy = factory ? factory(env) : MakeStrategy(o.strategy, env);
  TrainResult result = detail::TrainingLoop(ctl, o, inputs, *strategy).Run();
  trace.Finish();
  return result;
}

}  // namespace shardflow::train
