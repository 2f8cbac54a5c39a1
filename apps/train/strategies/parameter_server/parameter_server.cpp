#include "apps/train/strategies/parameter_server/parameter_server.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <thread>

#include "apps/train/strategies/parameter_server/parameter_server_internal.hpp"
#include "comm/collectives.hpp"
#include "core/backend/device_runtime.hpp"
#include "core/host_state.hpp"
#include "core/logging.hpp"
#include "core/trace.hpp"

namespace shardflow::train {
namespace ps {

StartPoint ParameterServerStrategy::Setup() {
  const comm::Communicator& job = this->job();
  comm::CommunicatorOptions options;
  options.discover_topology = false;
  // A worker waits longer than a server does (WorkerWaitSeconds): a server holding pulls names
  // the worker that is behind before the waiting workers blame the server.
  options.watchdog = comm::WatchdogOptions{
      .timeout_seconds = server_ ? this->options().watchdog_seconds : WorkerWaitSeconds()};
  ps_ = job.Split(0, job.rank(), options);
  group_ = job.Split(server_ ? 1 : 0, job.rank(), options);
  if (PsOptionsOf(this->options()).sparse_tables) {  // the chief and the servers: checkpoints
    ckpt_ = job.Split(server_ || job.rank() == 0 ? 0 : 1, job.rank(), options);
  }
  StartPoint start = ReplicaStrategy::Setup();  // every rank: the whole model, resumed
  pull_staging_ = HostStaging(model().arena().device());
  push_staging_ = HostStaging(model().arena().device());
  std::vector<int64_t> sizes;
  for (int id : model().arena().arena_order()) sizes.push_back(model().arena().spec(id).size);
  slices_ = CutArena(sizes, num_servers_);
  if (server_) MakeServerState(start.step);
  MakeSparse();
  if (rma_) MakeWindows();
  LogRoles();
  return start;
}

void ParameterServerStrategy::LogRoles() const {
  if (ps_->rank() != 0) return;
  SF_LOG(Info) << "parameter server: " << num_workers_ << " worker(s) (ranks "
               << RankList(roles_.workers) << ", rank 0 the chief), " << num_servers_
               << " server(s) (ranks " << RankList(roles_.servers) << "); max_staleness "
               << (staleness_ < 0
                       ? std::string("unbounded (asynchronous)")
                       : std::to_string(staleness_) + (staleness_ == 0 ? " (synchronous)" : ""))
               << "; transport " << (rma_ ? "rma (one-sided windows)" : "p2p (messages)");
  if (!DeviceSupports(options().model.device, DeviceFeature::kHostMemory)) {
    SF_LOG(Info) << "parameter server: the workers compute on "
                 << DeviceName(options().model.device)
                 << " (gradients pushed and parameters pulled through host memory); the servers "
                    "hold their slices and update them on the CPU";
  }
  for (int k = 0; k < num_servers_; ++k) {
    SF_LOG(Info) << "parameter server: server " << k << " (rank " << ServerRank(k) << ") holds "
                 << slices_[static_cast<size_t>(k)].size << " floats at arena offset "
                 << slices_[static_cast<size_t>(k)].offset;
  }
}

// ---------------------------------------------------------------- worker

void ParameterServerStrategy::WaitPushes() { ps_->WaitAll(pushes_); }

void ParameterServerStrategy::BeforeForward(const StepInput& in) {
  Pull(in.step, sparse_ ? &in.batch->x : nullptr);
  wire_steps_ += 1;
  for (int k = 0; k < num_servers_; ++k) {
    const size_t rows = sparse_ ? windows_->row_floats(k) : 0;
    const size_t asked = sparse_ ? requests_[static_cast<size_t>(k)].size() : 1;
    wire_bytes_ += static_cast<double>(
        (static_cast<size_t>(slices_[static_cast<size_t>(k)].size) + rows) * sizeof(float) +
        asked * sizeof(int64_t));
  }
  if (sparse_) window_rows_ += static_cast<double>(windows_->window_rows());
}

void ParameterServerStrategy::Pull(int64_t step, const Tensor* x) {
  SF_TRACE_SCOPE("pull");
  const auto t0 = Clock::now();
  WaitPushes();  // the gradients' buffer is about to be overwritten
  pull_step_ = step;
  last_step_ = std::max(last_step_, step - 1);
  if (rma_) {
    PullRma(step);
    pull_s_ = Since(t0);
    return;
  }
  comm::RequestList requests;
  float* params = PullBuffer();
  if (sparse_) windows_->Prepare(x);
  for (int k = 0; k < num_servers_; ++k) {
    const ServerSlice& s = slices_[static_cast<size_t>(k)];
    ps_->PostRecvFloats(params + s.offset, static_cast<size_t>(s.size), ServerRank(k), kParamsTag,
                        requests);
    if (!sparse_) {
      ps_->PostSendBytes(&pull_step_, sizeof(pull_step_), ServerRank(k), kPullTag, requests);
      continue;
    }
    std::vector<int64_t>& ask = requests_[static_cast<size_t>(k)];
    ask.assign(1, step);
    EncodeIds(windows_->ids_for(k), &ask);
    ps_->PostRecvFloats(windows_->rows_buffer(k), windows_->row_floats(k), ServerRank(k), kRowsTag,
                        requests);
    ps_->PostSendBytes(ask.data(), ask.size() * sizeof(int64_t), ServerRank(k), kPullTag, requests);
  }
  ps_->WaitAll(requests);
  Landed();
  if (sparse_) windows_->Scatter();
  pull_s_ = Since(t0);
}

float* ParameterServerStrategy::PullBuffer() {
  Arena<float>& arena = model().arena();
  pulled_ = pull_staging_.HostSpace(arena.device_params(), static_cast<size_t>(arena.size()));
  return pulled_;
}

void ParameterServerStrategy::Landed() {
  Arena<float>& arena = model().arena();
  if (pulled_ == nullptr) return;
  pull_staging_.ToDevice(arena.device_params(), pulled_, static_cast<size_t>(arena.size()));
}

const float* ParameterServerStrategy::StagedGrads() {
  Arena<float>& arena = model().arena();
  return push_staging_.ToHost(arena.device_grads(), static_cast<size_t>(arena.size()));
}

void ParameterServerStrategy::Push(const StepInput& in, bool skipped) {
  SF_TRACE_SCOPE("push");
  last_step_ = in.step;
  head_ = {.step = in.step, .skipped = skipped ? 1 : 0, .learning_rate = in.learning_rate};
  if (rma_) return PushRma(skipped);
  const float* grads = skipped ? nullptr : StagedGrads();
  for (int k = 0; k < num_servers_; ++k) {
    const ServerSlice& s = slices_[static_cast<size_t>(k)];
    ps_->PostSendBytes(&head_, sizeof(head_), ServerRank(k), kPushHeadTag, pushes_);
    if (skipped) continue;
    ps_->PostSendFloats(grads + s.offset, static_cast<size_t>(s.size), ServerRank(k), kPushDataTag,
                        pushes_);
    wire_bytes_ += static_cast<double>(s.size) * sizeof(float);
    if (!sparse_) continue;
    std::vector<float>& rows = grad_rows_[static_cast<size_t>(k)];
    windows_->GatherGrads(k, &rows);
    ps_->PostSendFloats(rows.data(), rows.size(), ServerRank(k), kPushRowsTag, pushes_);
    wire_bytes_ += static_cast<double>(rows.size()) * sizeof(float);
  }
}

// A stop signal on this worker: server 0 decides where every worker stops (DecideStop).
void ParameterServerStrategy::RequestStop() {
  if (requested_ || server_) return;
  requested_ = true;
  if (rma_) {
    const int64_t one = 1;
    control_win_->Put(
        &one, sizeof(one), ServerRank(0),
        SlotOffset(roles_.worker_index(ps_->rank())) + offsetof(WorkerSlot, stop_request));
    return;
  }
  ps_->PostSendBytes(&stop_note_, sizeof(stop_note_), ServerRank(0), kStopTag, stop_notes_);
}

// Server 0 sends the target before it answers any later pull (one-sided: writes it before any
// later grant), so a worker has it once its next pull is done; PullRma reads it with the grant.
int64_t ParameterServerStrategy::StopTarget() {
  if (stop_target_ < 0 && !rma_ && !server_ && ps_->Poll(kStopAtTag).has_value()) {
    stop_target_ = RecvValue<int64_t>(ServerRank(0), kStopAtTag);
  }
  return stop_target_;
}

// Every worker's next pull is for at most its newest pull's step + 1, answered after this
// decision reaches it: stopping after (newest of all) + 2 steps, every worker learns the target
// while it still has steps to take before it.
void ParameterServerStrategy::DecideStop() {
  if (stop_at_ >= 0 || ServerRank(0) != ps_->rank()) return;
  stop_at_ = *std::max_element(latest_pull_.begin(), latest_pull_.end()) + 2;
  SF_LOG(Info) << "parameter server: a worker got a stop signal; every worker stops after step "
               << stop_at_;
  if (rma_) {
    auto* slots = static_cast<WorkerSlot*>(control_win_->local());  // under the scan's lock
    for (int w = 0; w < num_workers_; ++w) slots[w].stop_at = stop_at_;
    return;
  }
  for (int w : roles_.workers) {
    ps_->PostSendBytes(&stop_at_, sizeof(stop_at_), w, kStopAtTag, stop_sends_);
  }
}

void ParameterServerStrategy::Finish() {
  if (server_) return;
  ps_->WaitAll(stop_notes_);
  WaitPushes();
  if (rma_) return FinishRma();
  comm::RequestList requests;
  for (int k = 0; k < num_servers_; ++k) {
    ps_->PostSendBytes(&last_step_, sizeof(last_step_), ServerRank(k), kDoneTag, requests);
  }
  ps_->WaitAll(requests);
}

// Evaluation sees the parameters every worker's last step has reached (in the synchronous
// mode; the newest ones otherwise).
EvalResult ParameterServerStrategy::Evaluate(const pipeline::Dataset& eval) {
  Pull(last_step_ + 1);
  return ReplicaStrategy::Evaluate(eval);
}

void ParameterServerStrategy::FetchServerState() {
  HostStateScope on_host(model(), &optimizer());  // a device worker's state, in host copies
  std::vector<NamedTensor> slots = optimizer().Slots();
  for (int k = 0; k < num_servers_; ++k) {
    const ServerSlice& s = slices_[static_cast<size_t>(k)];
    comm::RequestList requests;
    const int64_t ask = 1;
    ps_->PostSendBytes(&ask, sizeof(ask), ServerRank(k), kStateTag, requests);
    ps_->WaitAll(requests);
    const int64_t iterations = RecvValue<int64_t>(ServerRank(k), kStateIterTag);
    std::vector<float> data(static_cast<size_t>(s.size) * (1 + slots.size()));
    ps_->PostRecvFloats(data.data(), data.size(), ServerRank(k), kStateDataTag, requests);
    ps_->WaitAll(requests);
    std::copy_n(data.begin(), s.size, model().arena().params() + s.offset);
    for (size_t j = 0; j < slots.size(); ++j) {
      std::copy_n(data.begin() + static_cast<int64_t>(j + 1) * s.size, s.size,
                  slots[j].tensor->data<float>() + s.offset);
    }
    optimizer().set_iterations(iterations);
  }
  on_host.CopyBack();
}

void ParameterServerStrategy::SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                                             const std::string& iterator_state) {
  if (options().checkpoint.dir.empty()) return;
  if (group_->rank() == 0) FetchServerState();
  ReplicaStrategy::SaveCheckpoint(steps_done, steps_per_epoch, iterator_state);
}

// ---------------------------------------------------------------- server

template <typename T>
T ParameterServerStrategy::RecvValue(int source, int tag) {
  T value{};
  comm::RequestList requests;
  ps_->PostRecvBytes(&value, sizeof(value), source, tag, requests);
  ps_->WaitAll(requests);
  return value;
}

// `first_step`: the checkpoint's step, which every worker has applied up to: a synchronous
// server answers the first pulls of a resumed run at once. (Dynamic sharding resumed on another
// worker count restarts the step count at the saved fence, below it: pulls are then answered
// at once too, and a stop signal's target, DecideStop, may land a few steps later than + 2.)
void ParameterServerStrategy::MakeServerState(int64_t first_step) {
  mine_ = slices_[static_cast<size_t>(roles_.server_index(ps_->rank()))];
  const Arena<float>& whole = model().arena();
  for (int id : whole.arena_order()) {
    const ParamSpec& s = whole.spec(id);
    if (s.offset < mine_.offset || s.offset >= mine_.offset + mine_.size) continue;
    slice_.Declare(s.layer, s.layer_name, s.name, s.shape, s.decay);
  }
  slice_.Allocate();  // the same reverse-layer order: the whole arena's range, in place
  std::copy_n(whole.params() + mine_.offset, mine_.size, slice_.params());
  slice_optimizer_ = MakeOptimizer(options().optimizer, mine_.size);
  std::vector<NamedTensor> from = optimizer().Slots(), to = slice_optimizer_->Slots();
  for (size_t j = 0; j < to.size(); ++j) {
    std::copy_n(from[j].tensor->data<float>() + mine_.offset, mine_.size,
                to[j].tensor->data<float>());
  }
  slice_optimizer_->set_iterations(optimizer().iterations());
  incoming_.resize(static_cast<size_t>(mine_.size));
  sum_.assign(static_cast<size_t>(mine_.size), 0.0f);
  applied_.assign(static_cast<size_t>(num_workers_), first_step);
  pulled_at_.assign(static_cast<size_t>(num_workers_), 0);
  latest_pull_.assign(static_cast<size_t>(num_workers_), first_step);
}

int64_t ParameterServerStrategy::SlowestApplied() const {
  return *std::min_element(applied_.begin(), applied_.end());
}

void ParameterServerStrategy::SendTo(int worker, int tag, std::vector<float> data) {
  sends_.push_back({std::move(data), {}});
  PendingSend& s = sends_.back();
  ps_->PostSendFloats(s.data.data(), s.data.size(), worker, tag, s.requests);
}

void ParameterServerStrategy::CompleteSends(bool wait) {
  while (!sends_.empty()) {
    if (wait) {
      ps_->WaitAll(sends_.front().requests);
    } else if (!ps_->TestAll(sends_.front().requests)) {
      return;
    }
    sends_.pop_front();
  }
}

void ParameterServerStrategy::OnPush(int source) {
  const PushHead head = RecvValue<PushHead>(source, kPushHeadTag);
  if (head.skipped == 0) {
    comm::RequestList requests;
    ps_->PostRecvFloats(incoming_.data(), incoming_.size(), source, kPushDataTag, requests);
    if (sparse_) {
      incoming_rows_.resize(
          shard_->RowFloats(pull_ids_[static_cast<size_t>(roles_.worker_index(source))]));
      ps_->PostRecvFloats(incoming_rows_.data(), incoming_rows_.size(), source, kPushRowsTag,
                          requests);
    }
    ps_->WaitAll(requests);
  }
  Apply(static_cast<size_t>(roles_.worker_index(source)), head, incoming_.data(),
        incoming_rows_.data());
}

// A worker's push: counted (its staleness), then applied as it comes (asynchronous) or summed
// until the step's W pushes are in (synchronous).
void ParameterServerStrategy::Apply(size_t worker, const PushHead& head, const float* gradient,
                                    const float* rows) {
  const int64_t stale = updates_ - pulled_at_[worker];
  histogram_[static_cast<size_t>(std::min<int64_t>(stale, kHistogramBins - 1))] += 1;
  staleness_sum_ += static_cast<double>(stale);
  pushes_counted_ += 1;
  const float inv = 1.0f / static_cast<float>(num_workers_);
  if (staleness_ == 0) {  // synchronous: the mean of the step's W gradients, applied once
    if (head.skipped == 0) {
      for (int64_t i = 0; i < mine_.size; ++i) sum_[i] += gradient[i];
      if (sparse_) shard_->Accumulate(pull_ids_[worker], rows);
    }
    if (++pushes_this_step_ < num_workers_) return;
    float* g = slice_.grads();
    for (int64_t i = 0; i < mine_.size; ++i) g[i] = sum_[i] * inv;
    std::fill(sum_.begin(), sum_.end(), 0.0f);
    pushes_this_step_ = 0;
    slice_optimizer_->Step(slice_, head.learning_rate);
    if (sparse_) shard_->ApplyAccumulated(inv, head.learning_rate);
    ++updates_;
    std::fill(applied_.begin(), applied_.end(), head.step + 1);
    return;
  }
  if (head.skipped == 0) {  // asynchronous: every gradient as it comes, its share of a step
    float* g = slice_.grads();
    for (int64_t i = 0; i < mine_.size; ++i) g[i] = gradient[i] * inv;
    slice_optimizer_->Step(slice_, head.learning_rate);
    if (sparse_) shard_->Apply(pull_ids_[worker], rows, inv, head.learning_rate);
    ++updates_;
  }
  applied_[worker] = head.step + 1;
}

// A pull for step t is answered once the slowest worker has its steps up to t - 1 - s applied.
void ParameterServerStrategy::AnswerPulls() {
  const int64_t slowest = SlowestApplied();
  for (auto it = pending_pulls_.begin(); it != pending_pulls_.end();) {
    const auto [source, step] = *it;
    if (staleness_ >= 0 && step - slowest > staleness_) {
      ++it;
      continue;
    }
    max_gap_ = std::max(max_gap_, static_cast<double>(step - slowest));
    pulled_at_[static_cast<size_t>(roles_.worker_index(source))] = updates_;
    Grant(source);
    it = pending_pulls_.erase(it);
  }
  if (pending_pulls_.empty()) {
    held_since_ = {};
    held_noted_ = false;
  } else if (held_since_ == Clock::time_point{}) {
    held_since_ = Clock::now();
  }
}

std::string ParameterServerStrategy::HeldPullsText() const {
  if (pending_pulls_.empty()) return "";
  const int64_t slowest = SlowestApplied();
  std::vector<int> behind, waiting;
  for (int w = 0; w < num_workers_; ++w) {
    if (applied_[static_cast<size_t>(w)] == slowest) {
      behind.push_back(roles_.workers[static_cast<size_t>(w)]);
    }
  }
  for (const auto& [source, step] : pending_pulls_) waiting.push_back(source);
  std::sort(waiting.begin(), waiting.end());
  waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
  return "worker rank " + RankList(behind) + " is behind (steps up to " + std::to_string(slowest) +
         " applied) and the pulls of worker rank(s) " + RankList(waiting) +
         " wait for it (dist.max_staleness = " + std::to_string(staleness_) + ")";
}

void ParameterServerStrategy::NoteHeldPulls() {
  const double early = std::min(10.0, options().watchdog_seconds / 3);
  if (held_noted_ || pending_pulls_.empty() || Since(held_since_) < early) return;
  held_noted_ = true;
  SF_LOG(Warn) << "parameter server (rank " << ps_->rank() << "): " << HeldPullsText()
               << "; the job ends after dist.watchdog_seconds = " << options().watchdog_seconds
               << " s unless it catches up";
}

double ParameterServerStrategy::WorkerWaitSeconds() const {
  const double w = options().watchdog_seconds;
  return w + std::max(2.0, 0.1 * w);
}

// The parameters go to the worker (point-to-point), or the worker may now read them (one-sided:
// PublishParams has put them in the window).
void ParameterServerStrategy::Grant(int source) {
  const int worker = roles_.worker_index(source);
  if (rma_) {
    auto* slots = static_cast<WorkerSlot*>(control_win_->local());
    slots[worker].granted_seq = seen_req_[static_cast<size_t>(worker)];
    return;
  }
  SendTo(source, kParamsTag, std::vector<float>(slice_.params(), slice_.params() + mine_.size));
  if (!sparse_) return;
  const IdLists& ids = pull_ids_[static_cast<size_t>(worker)];
  std::vector<float> rows(shard_->RowFloats(ids));
  shard_->Gather(ids, rows.data());
  SendTo(source, kRowsTag, std::move(rows));
}

void ParameterServerStrategy::Handle(const comm::Communicator::Envelope& e) {
  if (roles_.worker_index(e.source) < 0) {
    throw Error(ErrorCode::kInternal, "parameter server got tag " + std::to_string(e.tag) +
                                          " from rank " + std::to_string(e.source) +
                                          ", not a worker");
  }
  switch (e.tag) {
    case kPullTag: {
      std::vector<int64_t> ask(std::max<size_t>(1, e.bytes / sizeof(int64_t)));
      comm::RequestList requests;
      ps_->PostRecvBytes(ask.data(), ask.size() * sizeof(int64_t), e.source, kPullTag, requests);
      ps_->WaitAll(requests);
      const int64_t step = ask[0];
      if (sparse_) {
        const std::string from = "worker rank " + std::to_string(e.source);
        IdLists ids = DecodeIds(ask.data() + 1, ask.size() - 1, pull_ids_.front().size(), from);
        shard_->CheckIds(ids, from);
        pull_ids_[static_cast<size_t>(roles_.worker_index(e.source))] = std::move(ids);
      }
      int64_t& latest = latest_pull_[static_cast<size_t>(roles_.worker_index(e.source))];
      latest = std::max(latest, step);
      pending_pulls_.emplace_back(e.source, step);
      break;
    }
    case kLookupTag:
      OnLookup(e.source, e.bytes);
      break;
    case kStopTag:
      RecvValue<int64_t>(e.source, kStopTag);
      DecideStop();
      break;
    case kPushHeadTag:
      OnPush(e.source);
      break;
    case kDoneTag:
      RecvValue<int64_t>(e.source, kDoneTag);
      ++done_;
      break;
    case kStateTag: {
      if (RecvValue<int64_t>(e.source, kStateTag) == 2) {  // the chief's WriteCheckpoint
        SavePartitionedCheckpoint(options().checkpoint, ckpt_->raw(), shard_->Part(model()), {});
        break;
      }
      const int64_t iterations = slice_optimizer_->iterations();
      comm::RequestList requests;
      ps_->PostSendBytes(&iterations, sizeof(iterations), e.source, kStateIterTag, requests);
      ps_->WaitAll(requests);
      std::vector<float> data(slice_.params(), slice_.params() + mine_.size);
      for (const NamedTensor& slot : slice_optimizer_->Slots()) {
        data.insert(data.end(), slot.tensor->data<float>(),
                    slot.tensor->data<float>() + mine_.size);
      }
      SendTo(e.source, kStateDataTag, std::move(data));
      break;
    }
    default:
      throw Error(ErrorCode::kInternal, "parameter server got unknown tag " +
                                            std::to_string(e.tag) + " from rank " +
                                            std::to_string(e.source));
  }
}

// The event loop: one message at a time, any worker, until every worker is done. Idle, it
// sleeps in short naps so that a server sharing a core leaves it to the workers.
void ParameterServerStrategy::Serve() {
  const double timeout = options().watchdog_seconds;
  auto heard = Clock::now();
  int idle = 0;
  while (done_ < num_workers_) {
    CompleteSends(false);
    const bool scanned = rma_ && ScanWindows();  // pushes, pulls, done (one-sided transport)
    if (scanned) {
      heard = Clock::now();
      idle = 0;
    }
    const std::optional<comm::Communicator::Envelope> e = ps_->Poll();
    if (!e && scanned) continue;
    if (!e) {
      if (++idle > 64) std::this_thread::sleep_for(std::chrono::microseconds(50));
      NoteHeldPulls();
      if (Since(heard) > timeout && !pending_pulls_.empty()) {
        throw Error(ErrorCode::kCommunication,
                    "parameter server (rank " + std::to_string(ps_->rank()) +
                        ") heard nothing for " + std::to_string(static_cast<int>(timeout)) +
                        " s: " + HeldPullsText(),
                    {.key = "dist.watchdog_seconds"});
      }
      if (Since(heard) > timeout) {
        std::vector<int> silent;
        for (int w = 0; w < num_workers_; ++w) {
          if (applied_[static_cast<size_t>(w)] < SlowestApplied() + 1) {
            silent.push_back(roles_.workers[static_cast<size_t>(w)]);
          }
        }
        throw Error(ErrorCode::kCommunication,
                    "parameter server (rank " + std::to_string(ps_->rank()) +
                        ") heard nothing for " + std::to_string(static_cast<int>(timeout)) +
                        " s with " + std::to_string(num_workers_ - done_) +
                        " worker(s) not done (ranks " + RankList(silent) + ")",
                    {.key = "dist.watchdog_seconds"});
      }
      continue;
    }
    idle = 0;
    heard = Clock::now();
    Handle(*e);
    if (!rma_) AnswerPulls();  // one-sided: ScanWindows grants, under the records' lock
  }
  CompleteSends(true);
  ps_->WaitAll(stop_sends_);
}

// ---------------------------------------------------------------- report

void ParameterServerStrategy::FinishReport(RunSummary* summary) {
  summary->strategy = name();
  summary->grid = std::to_string(num_workers_) +
                  (num_workers_ == 1 ? " worker + " : " workers + ") +
                  std::to_string(num_servers_) + (num_servers_ == 1 ? " server" : " servers") +
                  ", max_staleness " +
                  (staleness_ < 0 ? std::string("unbounded") : std::to_string(staleness_)) +
                  (rma_ ? ", rma" : ", p2p");
  std::vector<double> sums = histogram_;
  sums.push_back(pushes_counted_);
  sums.push_back(staleness_sum_);
  sums.push_back(wire_bytes_);
  sums.push_back(wire_steps_);
  sums.push_back(window_rows_);
  comm::AllreduceDoubles(ctl(), sums.data(), sums.size(), comm::ReduceOp::kSum);
  const double gap = comm::AllreduceDouble(ctl(), max_gap_, comm::ReduceOp::kMax);
  const double pushes = sums[kHistogramBins], stale = sums[kHistogramBins + 1];
  summary->strategy_series.emplace_back(
      "staleness_histogram", std::vector<double>(sums.begin(), sums.begin() + kHistogramBins));
  const double wire = sums[kHistogramBins + 2], steps = sums[kHistogramBins + 3];
  summary->strategy_figures = {{"servers", num_servers_},
                               {"workers", num_workers_},
                               {"max_step_gap", gap},
                               {"mean_staleness_updates", pushes > 0 ? stale / pushes : 0.0},
                               {"wire_mib_per_step", steps > 0 ? wire / steps / (1 << 20) : 0.0}};
  if (sparse_) {
    summary->strategy_figures.emplace_back("sparse_rows_per_step",
                                           steps > 0 ? sums[kHistogramBins + 4] / steps : 0.0);
  }
}

// With sparse tables: the parameters as the same model with whole tables lays them out (every
// table gathered on rank 0, so for tables that fit there: the tests' comparisons).
std::vector<float> ParameterServerStrategy::FinalParams() {
  std::vector<float> dense = DenseFinalParams();
  return sparse_ ? TablesInArenaOrder(dense) : dense;
}

// Rank 0 gathers every server's slice into its place in the arena and shares the result.
std::vector<float> ParameterServerStrategy::DenseFinalParams() {
  const int64_t total = slices_.back().offset + slices_.back().size;
  std::vector<float> whole(static_cast<size_t>(total));
  const size_t bytes = server_ ? static_cast<size_t>(mine_.size) * sizeof(float) : 0;
  const std::vector<std::vector<uint8_t>> parts =
      comm::GatherBytes(ctl(), server_ ? slice_.params() : nullptr, bytes);
  if (ctl().rank() == 0) {
    for (int k = 0; k < num_servers_; ++k) {
      const std::vector<uint8_t>& part = parts[static_cast<size_t>(ServerRank(k))];
      std::copy_n(
          part.data(), part.size(),
          reinterpret_cast<uint8_t*>(whole.data() + slices_[static_cast<size_t>(k)].offset));
    }
  }
  comm::Broadcast(ctl(), whole.data(), whole.size(), 0);
  return whole;
}

}  // namespace ps

std::vector<ServerSlice> CutArena(const std::vector<int64_t>& sizes, int servers) {
  const size_t n = sizes.size();
  std::vector<int64_t> after(n + 1, 0);  // non-empty tensors from i on
  int64_t total = 0;
  for (size_t j = n; j-- > 0;) {
    after[j] = after[j + 1] + (sizes[j] > 0 ? 1 : 0);
    total += sizes[j];
  }
  if (servers < 1 || servers > after[0]) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(servers) + " parameter servers for a model of " +
                    std::to_string(after[0]) + " parameter tensors (each server holds whole ones)",
                {.key = "dist.ps_ranks", .hint = "at most one server per parameter tensor"});
  }
  std::vector<ServerSlice> out;
  size_t i = 0;
  int64_t pos = 0;
  for (int k = 0; k < servers; ++k) {
    const int64_t begin = pos, left = servers - k - 1;
    const int64_t target = total * (k + 1) / servers;
    bool holds = false;
    while (i < n) {
      if (holds && (k + 1 < servers) &&
          (after[i] <= left || std::llabs(pos + sizes[i] - target) > std::llabs(pos - target))) {
        break;  // the rest is the later servers', or taking it moves away from the target
      }
      pos += sizes[i];
      holds = holds || sizes[i] > 0;
      ++i;
    }
    out.push_back({.offset = begin, .size = pos - begin});
  }
  return out;
}

std::unique_ptr<Strategy> MakeParameterServer(const StrategyEnv& env) {
  return std::make_unique<ps::ParameterServerStrategy>(env);
}

}  // namespace shardflow::train
