// The parameter server's one-sided transport (dist.ps_transport = rma; parameter_server.hpp).
// Each server exposes three windows (comm/rma_window.hpp): its slice of the parameters, one
// gradient slot per worker, and one WorkerSlot record per worker. A worker
//   pulls: puts {req_seq, step} in its record, waits until the server's granted_seq reaches it
//          (the staleness gate of AnswerPulls), then gets the parameters itself;
//   pushes: waits until its previous push is consumed (its slot is free), puts the gradient in
//          its slot, then {push_seq, head} in its record;
//   finishes: puts done = 1.
// The server scans the records under its own exclusive lock: applies each new push from its
// slot, publishes the parameters, then grants the pulls the gate allows, so a worker that sees
// its grant reads parameters at least as new as the gate requires. The data moves without the
// server: on one node the windows are shared memory and a pull is one copy.
#include <cstring>
#include <thread>

#include "apps/train/strategies/parameter_server/parameter_server_internal.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"

namespace shardflow::train::ps {

void ParameterServerStrategy::MakeWindows() {
  const size_t slice = server_ ? static_cast<size_t>(mine_.size) * sizeof(float) : 0;
  const size_t workers = static_cast<size_t>(num_workers_);
  params_win_ = std::make_unique<comm::RmaWindow>(*ps_, slice);
  grads_win_ = std::make_unique<comm::RmaWindow>(*ps_, slice * workers);
  control_win_ =
      std::make_unique<comm::RmaWindow>(*ps_, server_ ? workers * sizeof(WorkerSlot) : 0);
  if (server_) {
    control_win_->LockLocal();
    auto* slots = static_cast<WorkerSlot*>(control_win_->local());
    for (size_t w = 0; w < workers; ++w) slots[w] = WorkerSlot{};
    control_win_->UnlockLocal();
    PublishParams();
    seen_req_.assign(workers, 0);
    done_seen_.assign(workers, 0);
  }
  comm::Barrier(*ps_);  // no worker reads a window before its server has filled it
}

void ParameterServerStrategy::PublishParams() {
  params_win_->LockLocal();
  std::memcpy(params_win_->local(), slice_.params(),
              static_cast<size_t>(mine_.size) * sizeof(float));
  params_win_->UnlockLocal();
}

// Reads server `server`'s value until `done(value)`; spins briefly, then naps. A server silent
// for WorkerWaitSeconds (dist.watchdog_seconds and a margin) ends the job naming it and what
// was awaited.
template <typename Done>
void ParameterServerStrategy::WaitFor(int server, const char* what, Done done) const {
  const auto start = Clock::now();
  const size_t offset = SlotOffset(roles_.worker_index(ps_->rank()));
  for (int tries = 0;; ++tries) {
    WorkerSlot slot;
    control_win_->Get(&slot, sizeof(slot), ServerRank(server), offset);
    if (done(slot)) return;
    if (tries > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (Since(start) > WorkerWaitSeconds()) {
      throw Error(ErrorCode::kCommunication,
                  "worker (rank " + std::to_string(ps_->rank()) + ") waited " +
                      std::to_string(static_cast<int>(WorkerWaitSeconds())) +
                      " s for parameter server rank " + std::to_string(ServerRank(server)) + " " +
                      what,
                  {.key = "dist.watchdog_seconds"});
    }
  }
}

void ParameterServerStrategy::PullRma(int64_t step) {
  ++pull_seq_;
  const int64_t request[2] = {pull_seq_, step};
  const size_t offset = SlotOffset(roles_.worker_index(ps_->rank()));
  for (int k = 0; k < num_servers_; ++k) {
    control_win_->Put(request, sizeof(request), ServerRank(k),
                      offset + offsetof(WorkerSlot, req_seq));
  }
  float* params = PullBuffer();
  for (int k = 0; k < num_servers_; ++k) {
    WaitFor(k, "to answer a pull", [&](const WorkerSlot& s) {
      if (k == 0 && s.stop_at >= 0) stop_target_ = s.stop_at;  // written before the grant
      return s.granted_seq >= pull_seq_;
    });
    const ServerSlice& s = slices_[static_cast<size_t>(k)];
    params_win_->Get(params + s.offset, static_cast<size_t>(s.size) * sizeof(float), ServerRank(k),
                     0);
  }
  Landed();
}

void ParameterServerStrategy::PushRma(bool skipped) {
  const int worker = roles_.worker_index(ps_->rank());
  const float* grads = skipped ? nullptr : StagedGrads();
  for (int k = 0; k < num_servers_; ++k) {
    WaitFor(k, "to apply the previous push",
            [&](const WorkerSlot& s) { return s.consumed_seq >= push_seq_; });
    const ServerSlice& s = slices_[static_cast<size_t>(k)];
    const size_t bytes = static_cast<size_t>(s.size) * sizeof(float);
    if (!skipped) {
      grads_win_->Put(grads + s.offset, bytes, ServerRank(k), static_cast<size_t>(worker) * bytes);
    }
  }
  ++push_seq_;
  struct {
    int64_t seq;
    PushHead head;
  } record = {push_seq_, head_};
  static_assert(sizeof(record) == sizeof(int64_t) + sizeof(PushHead));
  for (int k = 0; k < num_servers_; ++k) {
    control_win_->Put(&record, sizeof(record), ServerRank(k),
                      SlotOffset(worker) + offsetof(WorkerSlot, push_seq));
  }
}

void ParameterServerStrategy::FinishRma() {
  const int64_t done = 1;
  for (int k = 0; k < num_servers_; ++k) {
    control_win_->Put(&done, sizeof(done), ServerRank(k),
                      SlotOffset(roles_.worker_index(ps_->rank())) + offsetof(WorkerSlot, done));
  }
}

// One pass over the workers' records: new pushes applied from their slots, new pulls queued,
// finished workers counted; then the parameters published and the allowed pulls granted.
// Returns whether anything was new.
bool ParameterServerStrategy::ScanWindows() {
  control_win_->LockLocal();
  auto* slots = static_cast<WorkerSlot*>(control_win_->local());
  bool any = false, updated = false;
  for (size_t w = 0; w < static_cast<size_t>(num_workers_); ++w) {
    WorkerSlot& slot = slots[w];
    if (slot.push_seq > slot.consumed_seq) {
      grads_win_->LockLocal();
      const float* gradient =
          static_cast<const float*>(grads_win_->local()) + w * static_cast<size_t>(mine_.size);
      const int64_t before = updates_;
      Apply(w, slot.head, gradient, nullptr);  // no sparse tables over rma (ps_unit.cpp)
      grads_win_->UnlockLocal();
      updated = updated || updates_ != before;
      slot.consumed_seq = slot.push_seq;
      any = true;
    }
    if (slot.req_seq > seen_req_[w]) {
      seen_req_[w] = slot.req_seq;
      latest_pull_[w] = std::max(latest_pull_[w], slot.req_step);
      pending_pulls_.emplace_back(roles_.workers[w], slot.req_step);
      any = true;
    }
    if (slot.stop_request != 0) DecideStop();  // writes stop_at in every record
    if (slot.done != 0 && done_seen_[w] == 0) {
      done_seen_[w] = 1;
      ++done_;
      any = true;
    }
  }
  if (updated) PublishParams();
  AnswerPulls();  // Grant writes granted_seq in the records, still under the lock
  control_win_->UnlockLocal();
  return any;
}

}  // namespace shardflow::train::ps
