// PipelineStage: one rank's stage of a pipeline, running a step's schedule of forward and
// backward passes over micro-batches and moving activations and gradients to its neighbours.
//
// Messages are non-blocking point-to-point on the pipeline's communicator (rank = stage):
// a forward pass posts its output to the next stage and, at once, the receive of that
// micro-batch's gradient; a stage receives the next micro-batch's activation while it computes
// the current one. Waits are guarded by the communicator's watchdog (a stage that died or hangs
// ends the job with an error naming the peer). Each micro-batch in flight holds a Slot: its
// layer states (MicroBatch), the received activation and gradient, and its sends; a slot
// returns to the free list once its backward pass ran and its sends completed, so 1F1B keeps
// about S - stage micro-batches of activations and GPipe all M.
// Tags: micro-batch m's activation 2m, its gradient 2m + 1; every message of a step completes
// within the step.
// The last stage turns its outputs into the loss (through a callback that also gives the
// output gradient); the first stage takes its inputs from the batch.
// A model on a device sends and receives through host buffers of the slot: an output or input
// gradient is copied to the host before its send is posted, and a received activation or
// gradient is host memory that the model's pass copies onto the device (Sequential::Forward and
// Backward take a tensor on any device). Works with any MPI, CUDA-aware or not.
// Thread-safety: one thread (the training loop's, or shardflow-predict's main thread).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "apps/common/pipeline_schedule.hpp"
#include "comm/communicator.hpp"
#include "core/model.hpp"

namespace shardflow::apps {

// Seconds of one step on one stage, by kind.
struct StageTimes {
  double compute_s = 0;   // forward and backward passes (and the loss)
  double p2p_wait_s = 0;  // blocked on receives and on sends to complete
  double total_s = 0;     // the schedule from start to the last send completed
};

class PipelineStage {
 public:
  // The loss of one micro-batch on the last stage: given the model's output y for rows
  // [begin, end) of the step's batch, returns the loss contribution and writes dL/dy into
  // `dy` (a tensor shaped like y; the callback allocates it with ReuseBuffer).
  using LossFn = std::function<void(const Tensor& y, int64_t begin, int64_t end, Tensor* dy)>;

  // `pipe`: the ranks of this pipeline, rank = stage. REQUIRES: model is this stage's part.
  PipelineStage(comm::Communicator& pipe, Sequential<float>& model);
  ~PipelineStage();

  int stage() const { return pipe_.rank(); }
  int stages() const { return pipe_.size(); }
  bool first() const { return stage() == 0; }
  bool last() const { return stage() == stages() - 1; }

  // One training step's passes: `rows[m]` rows per micro-batch (all > 0), `x` the batch's
  // input (read by the first stage only), `loss` called by the last stage after each forward.
  // Gradients accumulate into the model's arena (the caller zeroes them).
  StageTimes Train(PipelineSchedule schedule, const std::vector<int64_t>& rows, const Tensor& x,
                   uint64_t step, const LossFn& loss);

  // Forward passes only (evaluation, prediction): micro-batch outputs reach the last stage, which
  // calls `sink` with each output and its row range.
  using SinkFn = std::function<void(const Tensor& y, int64_t begin, int64_t end)>;
  void Infer(const std::vector<int64_t>& rows, const Tensor& x, const SinkFn& sink);

  // The most micro-batches whose forward pass ran and backward pass had not, at once (their
  // activations are held), over all steps so far; and the slots made (those micro-batches,
  // plus one being received, plus ones whose sends were still completing).
  int max_in_flight() const { return max_in_flight_; }
  size_t slots_made() const { return pool_.size(); }

 private:
  struct Slot;
  Slot& Acquire(int m);
  void Release(Slot& slot);
  void PostForwardRecv(int m);
  Tensor Forward(int m, const Tensor& x, const LossFn& loss, StageTimes* t);
  void Backward(int m, StageTimes* t);
  void Wait(comm::RequestList& requests, StageTimes* t);
  void FinishStep(StageTimes* t);
  // What to post a send from: `t` itself in host memory (the CPU), else its host copy in
  // `staged` (core/host_staging.hpp).
  const float* SendBuffer(const Tensor& t, Tensor& staged);

  comm::Communicator& pipe_;
  Sequential<float>& model_;
  std::vector<std::unique_ptr<Slot>> pool_;
  std::vector<Slot*> free_;
  std::deque<Slot*> releasing_;  // backward done, sends maybe in flight
  std::vector<Slot*> by_mb_;     // this step's slot of each micro-batch (null: none yet)
  std::vector<int64_t> rows_, begin_;
  std::vector<bool> recv_posted_;
  int in_flight_ = 0, max_in_flight_ = 0;
};

}  // namespace shardflow::apps
