#include "apps/common/pipeline_stage.hpp"

#include <algorithm>
#include <chrono>

#include "core/host_staging.hpp"
#include "core/trace.hpp"

namespace shardflow::apps {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int ActivationTag(int m) { return 2 * m; }
int GradientTag(int m) { return 2 * m + 1; }

size_t Count(const Tensor& t) { return static_cast<size_t>(t.num_elements()); }

}  // namespace

struct PipelineStage::Slot {
  MicroBatch mb;
  Tensor act_in;   // the activation received from the stage before (stage > 0)
  Tensor grad_in;  // the gradient of this stage's output (received, or the loss's)
  // A model on a device: host copies of the output and input gradient while their sends run.
  Tensor act_out, grad_out;
  comm::RequestList recv_act, recv_grad, sends;
};

PipelineStage::PipelineStage(comm::Communicator& pipe, Sequential<float>& model)
    : pipe_(pipe), model_(model) {}

PipelineStage::~PipelineStage() = default;

PipelineStage::Slot& PipelineStage::Acquire(int m) {
  // Slots whose sends have completed come back first; a new slot only when none has.
  for (auto it = releasing_.begin(); it != releasing_.end();) {
    if (pipe_.TestAll((*it)->sends)) {
      free_.push_back(*it);
      it = releasing_.erase(it);
    } else {
      ++it;
    }
  }
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Slot>());
    free_.push_back(pool_.back().get());
  }
  Slot* slot = free_.back();
  free_.pop_back();
  slot->mb.set_index(static_cast<uint64_t>(m));
  by_mb_[static_cast<size_t>(m)] = slot;
  return *slot;
}

void PipelineStage::Release(Slot& slot) { releasing_.push_back(&slot); }

const float* PipelineStage::SendBuffer(const Tensor& t, Tensor& staged) {
  HostStaging staging(t.device());
  const auto n = static_cast<size_t>(t.num_elements());
  if (staging.pass_through()) return t.device_data<float>();
  if (!staged.owns_storage() || staged.shape() != t.shape() || staged.device() != Device::kCpu) {
    staged = Tensor(DType::kFloat32, t.shape());
  }
  return staging.ToHost(t.device_data<float>(), n, staged.data<float>());
}

void PipelineStage::Wait(comm::RequestList& requests, StageTimes* t) {
  if (requests.empty()) return;
  SF_TRACE_SCOPE("p2p_wait");
  const auto t0 = Clock::now();
  pipe_.WaitAll(requests);
  t->p2p_wait_s += Since(t0);
}

void PipelineStage::PostForwardRecv(int m) {
  if (first() || m >= static_cast<int>(rows_.size()) || recv_posted_[static_cast<size_t>(m)]) {
    return;
  }
  Slot& slot = Acquire(m);
  Tensor& in = ReuseBuffer(slot.act_in, DType::kFloat32,
                           WithBatch(rows_[static_cast<size_t>(m)], model_.input_shape()));
  pipe_.PostRecvFloats(in.data<float>(), Count(in), stage() - 1, ActivationTag(m), slot.recv_act);
  recv_posted_[static_cast<size_t>(m)] = true;
}

// One forward pass; with `loss` (training) the last stage computes the loss gradient and the
// other stages post the receive of the gradient they will need.
Tensor PipelineStage::Forward(int m, const Tensor& x, const LossFn& loss, StageTimes* t) {
  const size_t i = static_cast<size_t>(m);
  PostForwardRecv(m);
  PostForwardRecv(m + 1);  // the next activation arrives while this one computes
  Slot* slot = by_mb_[i] != nullptr ? by_mb_[i] : &Acquire(m);
  Tensor in;
  if (first()) {
    in = x.Slice(begin_[i], begin_[i] + rows_[i]);
  } else {
    Wait(slot->recv_act, t);
    in = slot->act_in;
  }
  const auto t0 = Clock::now();
  const bool training = static_cast<bool>(loss);
  Tensor y;
  {
    SF_TRACE_SCOPE("forward");
    y = model_.Forward(in, training, slot->mb);
    if (last() && training) loss(y, begin_[i], begin_[i] + rows_[i], &slot->grad_in);
  }
  if (training) max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
  t->compute_s += Since(t0);
  if (last()) return y;
  pipe_.PostSendFloats(SendBuffer(y, slot->act_out), Count(y), stage() + 1, ActivationTag(m),
                       slot->sends);
  if (training) {
    Tensor& g = ReuseBuffer(slot->grad_in, DType::kFloat32, y.shape());
    pipe_.PostRecvFloats(g.data<float>(), Count(g), stage() + 1, GradientTag(m), slot->recv_grad);
  }
  return y;
}

void PipelineStage::Backward(int m, StageTimes* t) {
  Slot& slot = *by_mb_[static_cast<size_t>(m)];
  Wait(slot.recv_grad, t);
  const auto t0 = Clock::now();
  {
    SF_TRACE_SCOPE("backward");
    if (first()) {
      model_.Backward(slot.grad_in, slot.mb);
    } else {
      const Tensor dx = model_.BackwardWithInputGrad(slot.grad_in, slot.mb);
      pipe_.PostSendFloats(SendBuffer(dx, slot.grad_out), Count(dx), stage() - 1, GradientTag(m),
                           slot.sends);
    }
  }
  t->compute_s += Since(t0);
  --in_flight_;
  Release(slot);
}

void PipelineStage::FinishStep(StageTimes* t) {
  for (Slot* slot : releasing_) {
    Wait(slot->sends, t);
    free_.push_back(slot);
  }
  releasing_.clear();
}

StageTimes PipelineStage::Train(PipelineSchedule schedule, const std::vector<int64_t>& rows,
                                const Tensor& x, uint64_t step, const LossFn& loss) {
  const auto t0 = Clock::now();
  StageTimes t;
  const int m = static_cast<int>(rows.size());
  rows_ = rows;
  begin_.assign(rows.size(), 0);
  for (size_t i = 1; i < rows.size(); ++i) begin_[i] = begin_[i - 1] + rows[i - 1];
  by_mb_.assign(rows.size(), nullptr);
  recv_posted_.assign(rows.size(), false);
  model_.set_step(step);
  for (const PipelineOp& op : StageOps(schedule, stages(), stage(), m)) {
    if (op.forward) {
      Forward(op.micro_batch, x, loss, &t);
    } else {
      Backward(op.micro_batch, &t);
    }
  }
  FinishStep(&t);
  t.total_s = Since(t0);
  return t;
}

void PipelineStage::Infer(const std::vector<int64_t>& rows, const Tensor& x, const SinkFn& sink) {
  StageTimes t;
  rows_ = rows;
  begin_.assign(rows.size(), 0);
  for (size_t i = 1; i < rows.size(); ++i) begin_[i] = begin_[i - 1] + rows[i - 1];
  by_mb_.assign(rows.size(), nullptr);
  recv_posted_.assign(rows.size(), false);
  for (int m = 0; m < static_cast<int>(rows.size()); ++m) {
    const Tensor y = Forward(m, x, LossFn(), &t);
    const size_t i = static_cast<size_t>(m);
    // The output is the slot's buffer: consumed here, before the slot can be reused.
    if (last()) sink(y, begin_[i], begin_[i] + rows_[i]);
    Release(*by_mb_[i]);
  }
  FinishStep(&t);
}

}  // namespace shardflow::apps
