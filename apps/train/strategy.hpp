// Strategy: how the ranks of a job share the work of one training step.
//
// The training loop (training_loop.cpp) owns what every way of training has: the input
// iterator, the step count and the ranks' agreement on it, metrics and progress, when to
// evaluate and when to checkpoint, fault injection and the end-of-run report. A Strategy owns
// what differs: where the model lives (a replica on every rank, stages of it, shards of it),
// what one step computes and communicates, how evaluation and checkpoints see the model, and
// what the report says about it. Each implementation lives in a folder of strategies/ and is
// registered as a unit (strategy_unit.hpp: its name for `dist.strategy`, its keys, its rank plan
// and its factory), with no edit to the loop, the mains or the options.
//
// Why an interface with a few coarse hooks rather than Caffe-style callbacks around a fixed
// forward/backward: a pipeline schedule interleaves forward and backward passes of several
// micro-batches and a parameter server replaces the update, so the unit every strategy can
// agree on is "one optimizer step over this rank's batch" (TrainStep), not the phases inside
// it. Strategies that keep a full replica on every rank share those phases through
// ReplicaStrategy (replica_strategy.hpp), which calls back into the hooks that differ
// (gradient buckets ready, gradients finished, after the update).
//
// Call order, all collective over the job's ranks (the middle over step_comm's):
//   Setup -> (TrainStep | Evaluate | SaveCheckpoint)* -> Finish -> FinishReport -> FinalParams
// and on ranks that take no batches: Setup -> Serve -> FinishReport -> FinalParams.
// Thread-safety: one thread (the training loop's) calls a Strategy; a strategy may run its own
// communication threads internally.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/model_batch.hpp"
#include "apps/train/trainer.hpp"
#include "comm/communicator.hpp"

namespace shardflow::train {

// What the loop hands every strategy.
struct StrategyEnv {
  const comm::Communicator* job = nullptr;  // the job's ranks (make your own comms from it)
  comm::Communicator* ctl = nullptr;        // the loop's control communicator (this thread only)
  const TrainerOptions* options = nullptr;
};

// Where a run starts: after Setup, the step to continue from and, on resume, this rank's
// input-iterator state ("" : start of the data).
struct StartPoint {
  int64_t step = 0;
  std::string iterator_state;
  // Resumed onto another rank count (data-parallel only): every old rank's input state, in
  // rank order, and iterator_state empty (rank_input.hpp).
  std::vector<std::string> elastic_states;
};

// One step's batch on this rank, and where the step stands.
struct StepInput {
  const ModelBatch* batch = nullptr;
  int64_t step = 0;          // 0-based global step
  int64_t epoch = 0;         // 0-based
  bool epoch_end = false;    // the last step of an epoch (its batch may be partial)
  double learning_rate = 0;  // from the schedule, for this step
  // Host work that overlaps the device's (the next batch's staging, apps/train/
  // device_input.hpp), or empty. A strategy that runs its model on a device calls it once
  // after issuing backprop; the loop calls it after the step when the strategy did not.
  std::function<void()> while_device_busy;
};

// What one step adds to the metrics. Sums over this rank's contribution: the loop adds them
// over ranks, so a rank that computes no loss (a pipeline's first stage) reports zeros.
struct StepOutput {
  double loss = 0;            // mean loss over this rank's rows
  double loss_sum = 0;        // loss * rows
  double correct = 0;         // classify only (CorrectPerSample: a sequence counts 1)
  int64_t rows = 0;           // rows the loss covers
  double comm_blocked_s = 0;  // time blocked on communication that backprop did not hide
  bool skipped = false;       // non-finite: no update (train.on_nonfinite = skip_step)
};

// Evaluation over one pass of a dataset: sums over every rank (reduced by the strategy).
struct EvalResult {
  double loss = 0;      // mean loss per sample (reconstruct: mean squared error per sample)
  double accuracy = 0;  // classify only
  int64_t samples = 0;
  // A binary classifier's (two logits per sample) exact area under the ROC curve over every
  // rank's samples (core/metrics.hpp ExactAuc); NaN when one class is absent, nullopt when the
  // model is not a binary classifier.
  std::optional<double> auc;
};

// Evaluation sums of one rank: loss sum, correct, samples, and a binary classifier's scores.
// Add adds a batch's outputs `y` for rows with these labels (classify) or inputs (reconstruct:
// the targets); Reduce sums over the ranks of `comm` and gives the means (the same on every
// rank); the AUC's scores travel to the first rank of `comm`, 8 bytes and 1 per sample.
struct EvalSums {
  double sums[4] = {0, 0, 0, 0};  // loss, correct, samples, binary batches
  std::vector<double> scores;     // logit 1 - logit 0: monotone in the class-1 probability
  std::vector<uint8_t> positive;
  void Add(Task task, const Tensor& y, const Tensor& labels, const Tensor& x);
  EvalResult Reduce(comm::Communicator& comm);
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;

  // Builds (its part of) the model, restores a checkpoint or warm start when the options ask,
  // and makes the ranks consistent. Returns where training continues.
  virtual StartPoint Setup() = 0;
  // One optimizer step on this rank's batch.
  virtual StepOutput TrainStep(const StepInput& in) = 0;
  // Every rank evaluates its shard of `eval` once; the result is the same on every rank.
  virtual EvalResult Evaluate(const pipeline::Dataset& eval) = 0;
  // A checkpoint after `steps_done` steps; `iterator_state` is this rank's input position.
  virtual void SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                              const std::string& iterator_state) = 0;
  // How many model replicas process distinct samples in a step (samples = rows x this).
  virtual int data_parallel_size() const = 0;
  // Whether this rank's batches count in the samples trained (true for a replica on every
  // rank; a model-parallel replica counts its samples on one rank).
  virtual bool counts_samples() const { return true; }
  // This rank's data replica, 0..data_parallel_size()-1, when the replicas are not one per rank
  // of the loop's step communicator (model parallel: every rank of a replica reads alike); -1:
  // they are (the step communicator's rank).
  virtual int data_replica() const { return -1; }

  // Ranks that take no batches (a parameter server): the loop calls Serve() instead of the
  // steps, which returns once the training ranks are done (after their Finish()); then
  // FinishReport and FinalParams as on every rank.
  virtual bool trains_batches() const { return true; }
  virtual void Serve() {}
  // The ranks the loop's own collectives run over (step agreement, metrics, the time-based
  // checkpoint decision): null for all of the job's; a parameter server's workers otherwise.
  virtual comm::Communicator* step_comm() { return nullptr; }
  // False when ranks run their steps independently (asynchronous training): the loop then
  // logs rank 0's own metrics instead of reducing them over the ranks at every interval.
  virtual bool synchronous_metrics() const { return true; }
  // Ranks whose steps are not synchronous (synchronous_metrics() false) agree on a stop through
  // the strategy: RequestStop says this rank got a stop signal (idempotent, never blocks), and
  // StopTarget is the step count every such rank stops at once one is agreed, else -1. The
  // strategy guarantees that every rank learns the target before it has taken that many steps.
  virtual void RequestStop() {}
  virtual int64_t StopTarget() { return -1; }
  // After the last checkpoint, before the report: lets ranks that serve (Serve) stop.
  virtual void Finish() {}
  // Adds the strategy's own fields to the report (its name, what communication cost, ...).
  virtual void FinishReport(RunSummary* summary) = 0;
  // What its communication is, for the report's words and advice (core/run_report.hpp): the
  // default is a gradient all-reduce whose buckets are not known.
  virtual CommProfile comm_profile() const { return {}; }
  // The trained parameters as the whole model's flat arena (every rank returns the same;
  // called only when TrainerOptions::final_params is on).
  virtual std::vector<float> FinalParams() = 0;
  // This rank's whole model replica, for TensorBoard's histograms of the parameters and last
  // reduced gradients (tensorboard_log.hpp); null when the strategy keeps none.
  virtual Sequential<float>* replica_model() { return nullptr; }
};

// The registered unit `name`'s strategy (strategy_unit.hpp). Throws Error(kInvalidArgument)
// naming dist.strategy and the known names for an unknown name.
std::unique_ptr<Strategy> MakeStrategy(const std::string& name, const StrategyEnv& env);

// Whether a strategy reduces its gradients where they lie (comm/device_allreduce.hpp) rather than
// in host memory, from dist.device_allreduce (auto | nccl | host) and the model's device: auto
// when the device's runtime carries an all-reduce. Throws Error(kInvalidArgument) naming the key
// for nccl with a model in host memory (the CPU), or on a device without one.
bool UseDeviceAllreduce(const TrainerOptions& options, Device device);

}  // namespace shardflow::train
