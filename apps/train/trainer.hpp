// Training of one model by the ranks of an MPI communicator: the options, the inputs and the
// entry point.
//
// RunTraining runs the training loop (training_loop.cpp) with a Strategy (strategy.hpp) that
// decides how the ranks share the work: the registered unit options.strategy names
// (strategy_unit.hpp; the built-in ones are in strategies/), or one handed in as a factory.
// What holds for every strategy:
// Equal steps: ranks agree on the number of batches per epoch (a MIN all-reduce over their
// local counts), so an uneven shard never leaves a rank waiting in a collective; what that
// leaves out is logged and counted. A last, partial batch is weighted by its size, so the
// averaged gradient is the gradient of the mean loss over the global batch.
// Evaluation runs every rank over its shard of the evaluation set, every record exactly once,
// and reduces the sums exactly (no padded duplicates).
// Resume: a run stopped (max_steps, a crash after a checkpoint) and continued with resume
// reproduces the uninterrupted run bit for bit: the iterator state, optimizer state and step
// are restored, dropout masks are keyed by the step, and the learning-rate schedule spans the
// planned epochs, not max_steps (tests/train/train_runs.sh resume).
// Test-only faults (SHARDFLOW_TEST_FAULT): core/fault_injection.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/common/experiment_config.hpp"
#include "apps/common/pipeline_schedule.hpp"
#include "apps/common/rank_grid.hpp"
#include "apps/train/early_stopping.hpp"
#include "apps/train/nonfinite_guard.hpp"
#include "apps/train/rank_input.hpp"
#include "apps/train/stall_inspector.hpp"
#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "core/model.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/optim/optimizer.hpp"
#include "core/run_report.hpp"
#include "io/checkpoint/checkpoint.hpp"
#include "io/pipeline/dataset.hpp"
#include "io/pipeline/input_pipeline.hpp"

namespace shardflow::train {

using apps::BatchSpec;
using apps::LayerCost;
using apps::ModelBatch;
using apps::PipelineSchedule;
using apps::PipelineScheduleName;
using apps::Task;

// The rank grid ([dist] pipeline_stages, tensor_parallel) and how a split model runs
// (stage_boundaries, micro_batches, schedule). Plain data parallelism is the grid N x 1 x 1; a
// grid with stages or tensor ways is claimed by the strategy that splits models
// (strategies/model_parallel/).
struct ModelParallelOptions {
  apps::GridShape grid;               // replicas x stages x ways; plain data parallel: N x 1 x 1
  std::vector<int> stage_boundaries;  // first layer of stages 1..S-1; empty: balanced by FLOPs
  int micro_batches = 1;              // per step, through the pipeline
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
};

// A strategy's own options: its folder's type derives from this, and its unit's Resolve
// (strategy_unit.hpp) fills it; nothing outside the strategy's folder reads it.
struct StrategyOptions {
  virtual ~StrategyOptions() = default;
};

// One rank's role in a run, stated by the strategy's unit before anything is allocated
// (strategy_unit.hpp): printed by --check, read by the main (which shard to read), the device
// choice (who takes a GPU) and the loop.
struct RankRole {
  int shard = 0;              // the training data's shard it reads, 0..shards-1; -1: none
  bool takes_batches = true;  // false: it serves the ranks that do (a parameter server)
  bool takes_gpu = true;      // false: it never runs a layer, so it stays on the CPU
  int compute_index = 0;      // among its node's ranks that take a GPU; -1: takes none
  bool writes_checkpoints = false;
  std::string role;  // for --check and logs: "replica 1", "worker 0", "server 0", ...
};

struct JobPlan {
  std::vector<RankRole> ranks;  // by job rank
  int shards = 1;               // distinct shards of the training data (data replicas)
};

// The model (apps::ModelSetup: spec, input shape, task, features) and how to train it.
struct TrainerOptions : apps::ModelSetup {
  // Optimisation.
  OptimizerOptions optimizer;
  LrScheduleOptions schedule;
  double clip_norm = 0;                 // 0: no clipping
  NonfiniteOptions nonfinite;           // a NaN/Inf loss or gradient: fail or skip the step
  EarlyStoppingOptions early_stopping;  // off unless train.early_stopping is set
  int64_t epochs = 1;
  int64_t per_rank_batch = 32;  // this rank's (replica's)
  // Every replica's batch when a global batch does not divide over the replicas (the first
  // G mod R take one more: SplitGlobalBatch); empty: every replica takes per_rank_batch. Each
  // step then weighs the replicas' gradients by their rows, so a step is the global batch's mean.
  std::vector<int64_t> replica_batches;
  bool global_batch = false;        // train.batch_semantics = global (elastic resume keeps it)
  bool lr_scaled_by_ranks = false;  // train.lr_scaling = linear (the base LR has the rank count) //
                                    // for the report; batches come from the pipeline
  int64_t max_steps = 0;            // stop after this many steps in total (0: no limit)
  double max_memory_mb = 0;         // per-rank cap on the model state (memory_guard.hpp); 0: none

  // Distribution.
  std::string strategy;  // a registered unit's name (strategy_unit.hpp); "": the default
  // The strategy's own options (its unit's Resolve), and every rank's role (its unit's Plan;
  // empty when the options were built by hand: PlanOf plans then).
  std::shared_ptr<const StrategyOptions> strategy_options;
  JobPlan plan;
  comm::AllreduceOptions allreduce{.mode = comm::ReduceMode::kAverage};
  double bucket_mb = 4;
  bool overlap = true;
  std::string device_allreduce = "auto";  // a model on a device: auto | nccl | host
  bool device_prefetch = true;            // a model on a device: apps/train/device_input.hpp
  std::string peak_probe = "auto";        // apps/train/peak_probe.hpp
  double watchdog_seconds = 300;
  ModelParallelOptions model_parallel;
  // Ranks claim batches as they go (dynamic_shard.hpp), for strategies whose ranks step
  // independently (StrategyUnit::dynamic_sharding).
  bool dynamic_sharding = false;

  // The input as this rank reads it, resolved from the config's [data] and [eval] (which stay as
  // parsed): this rank's batch and share of the records, one pass per epoch, evaluation in order
  // with data.augmentations' deterministic counterpart (pipeline::EvaluationAugmentations),
  // record ids where elastic resume needs them, the label range check.
  pipeline::InputSpec train_input;
  pipeline::InputSpec eval_input;

  // Output and checkpoints (rank 0 writes).
  std::string output_dir;               // "" : no files
  CheckpointOptions checkpoint;         // dir "" : no checkpoints
  int64_t checkpoint_every_steps = 0;   // 0: off
  int64_t checkpoint_every_epochs = 1;  // 0: off; the last step always has one
  double checkpoint_every_seconds = 0;  // 0: off (checkpoint.every_minutes or every_seconds)
  bool resume = false;                  // continue from the latest checkpoint in checkpoint.dir
  bool resume_if_possible = false;      // with resume: no checkpoint starts fresh (else an error)
  std::string warm_start;               // a checkpoint to take weights from (not with resume)
  std::string config_text;              // the resolved config, stored in checkpoints
  int64_t log_every_steps = 50;         // metrics.jsonl and progress metrics
  bool progress = true;                 // rank 0 progress bar
  bool trace = false;                   // Chrome trace per rank in output_dir
  bool tensorboard = false;             // TensorBoard event files in output_dir/tb (rank 0)
  int64_t histogram_every = 100;        // steps between TensorBoard histograms; 0: none
  StallOptions stall{.factor = 0};      // the stall inspector (stall_inspector.hpp); 0: off
  bool final_params = true;             // TrainResult::params (tests); the app turns it off

  // For the report's advice: the current values of the knobs it may name.
  TuningContext tuning;
};

// Every data replica's batch: o.replica_batches when uneven, else `replicas` x per_rank_batch.
inline std::vector<int64_t> ReplicaBatches(const TrainerOptions& o, int replicas) {
  return o.replica_batches.empty()
             ? std::vector<int64_t>(static_cast<size_t>(replicas), o.per_rank_batch)
             : o.replica_batches;
}

// The input: the training pipeline (one pass, this rank's shard, batched) and an optional
// evaluation pipeline (one pass, this rank's shard, batched, every record exactly once).
struct TrainerInputs {
  std::function<pipeline::Dataset()> train;
  // Batches in one pass of `train` on this rank, when cheaper than iterating (may be empty).
  std::function<int64_t()> local_batches;
  std::function<pipeline::Dataset()> eval;  // may be empty
  // The training input as another rank count would read it, for resuming onto a different
  // one (rank_input.hpp); empty: a checkpoint of another rank count is refused.
  InputFactories factories;
  // This rank's shard of the training files (straggler_log.hpp ShardSizeOf), looked up at the
  // end only when a clear input-bound straggler may be explained by it; may be empty.
  std::function<ShardSize()> shard_size;
};

struct TrainResult {
  RunSummary summary;
  std::vector<float> params;  // the final parameters, whole-model arena order (every rank the
                              // same; empty when TrainerOptions::final_params is off)
  double final_train_loss = 0;
  std::vector<double> step_losses;  // global mean loss per step (rank 0; all ranks hold it)
  // Resumed from a checkpoint at or past the last planned step: nothing ran, and `summary` and
  // `params` are empty; the caller leaves the run's outputs as they are.
  bool already_complete = false;
  // Stopped early by a stop signal (core/stop_signal.hpp) on some rank: the ranks agreed on the
  // step, the checkpoint holds it, and the run continues with --resume. The signal this rank
  // got, or 0 when only a peer got one.
  bool stopped = false;
  int stop_signal = 0;
};

class Strategy;
struct StrategyEnv;
using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyEnv&)>;

// Collective over the ranks of `job`. The strategy is made by `factory` when given, else the one
// named by options.strategy. Throws Error on bad options, data errors or communication failures.
TrainResult RunTraining(const comm::Communicator& job, const TrainerOptions& options,
                        const TrainerInputs& inputs, const StrategyFactory& factory = {});

}  // namespace shardflow::train
