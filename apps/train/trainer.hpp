// Synchronous data-parallel training of one model by the ranks of an MPI communicator.
//
// Every rank holds a full replica. Per step, each rank takes the next batch of its own input
// shard, runs forward and backward, and the gradient reducer averages gradients over ranks
// bucket by bucket while backprop continues (comm/gradient_reducer.hpp); then every rank applies
// the same optimizer update, so replicas stay identical. Parameters are broadcast from rank 0 at
// start (after a resume or warm start too).
//
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
// Testing hook: SHARDFLOW_TEST_FAULT=kill:R:S or hang:R:S makes rank R raise SIGKILL or SIGSTOP
// at the start of step S (the failure tests); unset in normal use.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

#include "comm/allreduce.hpp"
#include "core/model.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/optim/optimizer.hpp"
#include "core/run_report.hpp"
#include "io/checkpoint.hpp"
#include "io/pipeline/dataset.hpp"

namespace shardflow::train {

enum class Task { kClassify, kReconstruct };

struct TrainerOptions {
  // Model.
  std::string model_spec = "mlp";   // a preset or a layer spec (core/model.hpp)
  Shape input_shape = {28, 28, 1};  // per sample
  ModelOptions model;
  Task task = Task::kClassify;
  // Which features of a batch are the input and the label (classify) and how the input is
  // converted: uint8 inputs are cast to float32 and multiplied by input_scale.
  std::string input_feature = "image";
  std::string label_feature = "label";
  double input_scale = 1.0;

  // Optimisation.
  OptimizerOptions optimizer;
  LrScheduleOptions schedule;
  double clip_norm = 0;  // 0: no clipping
  int64_t epochs = 1;
  int64_t per_rank_batch = 32;  // for the report; batches come from the pipeline
  int64_t max_steps = 0;        // stop after this many steps in total (0: no limit)

  // Distribution.
  comm::AllreduceOptions allreduce{.mode = comm::ReduceMode::kAverage};
  double bucket_mb = 4;
  bool overlap = true;
  double watchdog_seconds = 300;

  // Output and checkpoints (rank 0 writes).
  std::string output_dir;        // "" : no files
  CheckpointOptions checkpoint;  // dir "" : no checkpoints
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_minutes = 0;
  bool resume = false;           // continue from the latest checkpoint in checkpoint.dir
  std::string warm_start;        // a checkpoint to take weights from (not with resume)
  std::string config_text;       // the resolved config, stored in checkpoints
  int64_t log_every_steps = 50;  // metrics.jsonl and progress metrics
  bool progress = true;          // rank 0 progress bar
  bool trace = false;            // Chrome trace per rank in output_dir

  // For the report's advice: the current values of the knobs it may name.
  TuningContext tuning;
};

// The input: the training pipeline (one pass, this rank's shard, batched) and an optional
// evaluation pipeline (one pass, this rank's shard, batched, every record exactly once).
struct TrainerInputs {
  std::function<pipeline::Dataset()> train;
  // Batches in one pass of `train` on this rank, when cheaper than iterating (may be empty).
  std::function<int64_t()> local_batches;
  std::function<pipeline::Dataset()> eval;  // may be empty
};

struct TrainResult {
  RunSummary summary;
  std::vector<float> params;  // the final parameters (every rank holds the same)
  double final_train_loss = 0;
  std::vector<double> step_losses;  // global mean loss per step (rank 0; all ranks hold it)
};

// Collective over `comm`. Throws Error on bad options, data errors or communication failures.
TrainResult RunTraining(MPI_Comm comm, const TrainerOptions& options, const TrainerInputs& inputs);

}  // namespace shardflow::train
