// ReplicaStrategy: the part of every strategy that keeps a full model replica on each rank.
//
// It builds the model and optimizer, resumes or warm-starts them, runs one step's forward,
// loss, backward and optimizer update, evaluates, and saves checkpoints (rank 0 writes, every
// rank's input position gathered into the file). What a replica strategy adds is how replicas
// stay in step, through four hooks:
//   AttachToModel()     once after Setup built the model: install a gradients-ready hook etc.
//   BeginBackward()     before each backward pass (gradients were just zeroed)
//   FinishGradients()   after backward: make the gradients the ones to apply; returns the
//                       seconds blocked on communication
//   AfterUpdate(step)   after the optimizer step (also called when a non-finite step's
//                       update was skipped, so strategies keep their step count)
// and SyncReplicas(), which makes what evaluation and checkpoints read identical on every rank
// (by default: average the non-trainable buffers, e.g. batch-norm statistics).
// After FinishGradients every step is checked for a non-finite loss or gradients
// (nonfinite_guard.hpp: train.on_nonfinite fails the job or skips the update).
// Data parallelism (data_parallel.hpp) reduces gradient buckets as backprop finishes them;
// local SGD (tests/train) does nothing per step and averages parameters every k steps.
// Thread-safety: as Strategy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/train/nonfinite_guard.hpp"
#include "apps/train/strategy.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"

namespace shardflow::train {

class ReplicaStrategy : public Strategy {
 public:
  explicit ReplicaStrategy(const StrategyEnv& env);
  ~ReplicaStrategy() override;

  StartPoint Setup() override;
  StepOutput TrainStep(const StepInput& in) override;
  EvalResult Evaluate(const pipeline::Dataset& eval) override;
  void SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                      const std::string& iterator_state) override;
  int data_parallel_size() const override { return replicas().size(); }
  void FinishReport(RunSummary* summary) override;
  std::vector<float> FinalParams() override;
  Sequential<float>* replica_model() override { return model_.get(); }

 protected:
  // The options of this rank's model: the trainer's by default (a parameter server keeps its
  // on the CPU whatever train.device says).
  virtual ModelOptions ReplicaModelOptions() const { return options().model; }
  virtual void AttachToModel() {}
  virtual void BeginBackward() {}
  virtual double FinishGradients() = 0;
  virtual void AfterUpdate(int64_t /*step*/) {}
  virtual void SyncReplicas();
  // Before the forward pass of a step (a parameter server's workers pull parameters here).
  virtual void BeforeForward(const StepInput& /*in*/) {}
  // Before the forward pass of each evaluation batch (a parameter server's workers look up the
  // batch's rows of the sparse tables here).
  virtual void BeforeEvalForward(const ModelBatch& /*batch*/) {}
  // The update of a step whose gradients passed the non-finite check: the local optimizer's
  // step by default (a parameter server's workers push the gradients instead); and what a
  // skipped step does instead.
  virtual void ApplyUpdate(const StepInput& in);
  virtual void SkipUpdate(const StepInput& /*in*/) {}
  // The ranks holding replicas that train (their batch weights, evaluation sums, averages and
  // input positions): the loop's control communicator by default.
  virtual comm::Communicator& replicas() const { return ctl(); }
  // Whether a step's gradient is the mean over the replicas' rows, so uneven batches are
  // weighed by their rows (true); false where each replica's gradient stands alone (workers
  // that push each their own batch's mean to a parameter server).
  virtual bool averages_over_replicas() const { return true; }

  // Rank 0 of replicas(): writes the checkpoint of `state` (the model and optimizer whole, by
  // default) and returns its path.
  virtual std::string WriteCheckpoint(const TrainingState& state);
  // The checkpoint Setup resumed from ("" when none).
  const std::string& resumed_from() const { return resumed_from_; }

  // Rank 0's parameters and buffers to every rank.
  void BroadcastModel();
  // The mean over ranks of every parameter (and buffer).
  void AverageParams();
  void AverageBuffers();

  comm::Communicator& ctl() const { return *env_.ctl; }
  const TrainerOptions& options() const { return *env_.options; }
  const comm::Communicator& job() const { return *env_.job; }
  Sequential<float>& model() { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  // The factor that makes a partial last batch weigh by its size in the global mean.
  double BatchWeight(int64_t rows, bool epoch_end);

  StrategyEnv env_;
  BatchSpec spec_;
  std::unique_ptr<Sequential<float>> model_;
  std::unique_ptr<Optimizer> optimizer_;
  Tensor dout_, eval_scratch_;
  NonfiniteGuard guard_;  // train.on_nonfinite, checked after FinishGradients
  std::string resumed_from_;
};

}  // namespace shardflow::train
