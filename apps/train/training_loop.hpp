// The training loop's class, shared by training_loop.cpp (the loop over a static plan of steps)
// and dynamic_loop.cpp (dynamic sharding: batches claimed, workers meeting at fences). Only
// those two files include this header; the entry point is trainer.hpp's RunTraining.
// Thread-safety: one thread per rank.
#pragma once

#include <chrono>
#include <memory>

#include "apps/train/device_input.hpp"
#include "apps/train/dynamic_shard.hpp"
#include "apps/train/metrics_log.hpp"
#include "apps/train/rank_input.hpp"
#include "apps/train/stall_inspector.hpp"
#include "apps/train/step_plan.hpp"
#include "apps/train/straggler_log.hpp"
#include "apps/train/strategy.hpp"
#include "apps/train/tensorboard_log.hpp"
#include "apps/train/trainer.hpp"
#include "comm/collectives.hpp"
#include "core/progress.hpp"
#include "io/pipeline/step_count.hpp"

namespace shardflow::train::detail {

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Sums since the last metrics line, on this rank.
struct Interval {
  double loss_sum = 0, correct = 0, rows = 0;  // reduced over ranks when logged
  double wait_s = 0, comm_s = 0;               // this rank's
  Clock::time_point start = Clock::now();
};

class TrainingLoop {
 public:
  TrainingLoop(comm::Communicator& ctl, const TrainerOptions& o, const TrainerInputs& inputs,
               Strategy& strategy)
      : job_(ctl), o_(o), inputs_(inputs), strategy_(strategy) {}
  TrainResult Run();

 private:
  void RunStep(int64_t step);
  // The step's training once its batch is in batch_ (fetched from t0 on).
  void TrainBatch(int64_t step, Clock::time_point t0, bool epoch_end);
  // A run resumed at or past its last step: every rank of the job agrees (true: nothing to do).
  bool AlreadyComplete(const StartPoint& start, int64_t from);
  void OpenOutputs(int64_t from);
  // The end of a run: final evaluation, checkpoint, the servers released, the report.
  void FinishRun(int64_t steps, Clock::time_point loop_start);
  std::string InputState(int64_t steps_done);
  // A resumed run's metrics start from the checkpoint's running sums (SavedInput).
  void RestoreMetricSums(const std::array<double, 3>& epoch, const std::array<double, 3>& interval);
  // Dynamic sharding (dynamic_loop.cpp).
  TrainResult RunDynamic(const StartPoint& start);
  int64_t OpenDynamicInput(const StartPoint& start);
  int64_t ResumeFence(const StartPoint& start, const ClaimPlan& claims) const;
  void TrainClaimed(int64_t claim, Clock::time_point t0);
  void AfterStep(int64_t step);
  void LogInterval(int64_t step);
  // Whether it saved one (every rank alike).
  bool MaybeCheckpoint(int64_t step, bool interval_end);
  // train.early_stopping: after an epoch's evaluation `e` (and its checkpoint, when `saved`).
  void WatchEarlyStopping(int64_t step, const EvalResult& e, bool saved);
  void KeepBestCheckpoint(int64_t steps_done);
  void SaveCheckpoint(int64_t steps_done);
  EvalResult Evaluate(int64_t step, bool final);
  void Summarize(int64_t steps);
  void SummarizeDeviceInput(double wall);
  int64_t StopAfter(int64_t steps_done);
  void Stop(int64_t steps_done);
  void OpenInput(const StartPoint& start);
  double Lr(int64_t step) const { return LearningRate(plan_.schedule, step) * lr_scale_; }
  bool chief() const { return job_.rank() == 0; }

  comm::Communicator& job_;  // every rank (the report)
  // The ranks that take batches, over which the loop's collectives run: the job's, or the
  // strategy's step_comm() (known after Setup).
  comm::Communicator* steps_ = &job_;
  const TrainerOptions& o_;
  const TrainerInputs& inputs_;
  Strategy& strategy_;
  const BatchSpec spec_ = o_.batch_spec();
  StepPlan plan_;
  EpochMap map_;
  double lr_scale_ = 1.0;  // elastic resume with per-rank batch semantics (rank_input.hpp)
  std::unique_ptr<RankInput> input_;
  std::shared_ptr<pipeline::StepLimitReport> left_out_ =
      std::make_shared<pipeline::StepLimitReport>();
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<ProgressReporter> progress_;
  TrainResult result_;
  StepTimeTotals times_;
  Interval interval_;
  Clock::time_point last_checkpoint_ = Clock::now();
  int64_t samples_seen_ = 0;
  int64_t skipped_steps_ = 0;  // train.on_nonfinite = skip_step (every rank counts alike)
  int64_t stop_at_ = -1;       // the step count a stop signal ends the run at, once agreed
  comm::AsyncAllreduceInt64 stop_round_;  // the agreement posted after the last step
  pipeline::Element batch_;
  Tensor scratch_;
  // A model on a device: its batches staged there, the next during the current step.
  std::unique_ptr<DeviceInput> device_input_;
  pipeline::Element peeked_;
  std::unique_ptr<TensorBoardLog> tb_;     // rank 0, [log] tensorboard
  StragglerLog arrivals_;                  // when this rank reached each step's all-reduce
  int64_t first_step_ = 0;                 // of this run (a resumed run starts past 0)
  Clock::time_point previous_end_;         // the end of the previous step (or the loop's start)
  std::unique_ptr<StallInspector> stall_;  // [log] stall_factor > 0
  std::unique_ptr<DynamicShard> dynamic_;  // dist.sharding = dynamic
  int64_t logged_step_ = 0;                // dynamic: the step of the last metrics line
  int64_t progress_step_ = 0;              // dynamic: the step the progress bar shows
  // The training metrics of the epoch under way (loss sum, correct, rows; over the ranks when
  // they meet), for the epoch's log line.
  std::array<double, 3> epoch_sums_{};    // the epoch's loss sum, correct, rows (as logged)
  std::unique_ptr<EarlyStopping> early_;  // train.early_stopping
  bool stop_early_ = false;               // it has decided: the run ends after this step
};

}  // namespace shardflow::train::detail
