// The parameter-server strategy's class, shared by its two transports: point-to-point messages
// and a server event loop (parameter_server.cpp), and one-sided windows the server scans
// (parameter_server_rma.cpp). Only those two files include this header; the strategy's
// contract is parameter_server.hpp's.
// Thread-safety: as Strategy.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "apps/train/replica_strategy.hpp"
#include "apps/train/strategies/parameter_server/parameter_server.hpp"
#include "apps/train/strategies/parameter_server/ps_options.hpp"
#include "apps/train/strategies/parameter_server/ps_placement.hpp"
#include "apps/train/strategies/parameter_server/sparse_tables.hpp"
#include "comm/rma_window.hpp"
#include "core/host_staging.hpp"

namespace shardflow::train::ps {

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Message tags of the protocol (on the strategy's own communicator).
constexpr int kPullTag = 101;        // worker -> server: int64 step
constexpr int kParamsTag = 102;      // server -> worker: the slice's parameters
constexpr int kPushHeadTag = 103;    // worker -> server: PushHead
constexpr int kPushDataTag = 104;    // worker -> server: the slice's gradient (unless skipped)
constexpr int kDoneTag = 105;        // worker -> server: int64, the worker's last step
constexpr int kStateTag = 106;       // chief -> server: int64 (checkpoint)
constexpr int kStateIterTag = 107;   // server -> chief: int64 optimizer iterations
constexpr int kStateDataTag = 108;   // server -> chief: parameters, then each optimizer slot
constexpr int kStopTag = 109;        // worker -> server 0: int64, it got a stop signal
constexpr int kStopAtTag = 110;      // server 0 -> every worker: int64, the step count to stop at
constexpr int kRowsTag = 111;        // server -> worker: the pull's rows of the sparse tables
constexpr int kPushRowsTag = 112;    // worker -> server: their gradient rows, in the same order
constexpr int kLookupTag = 113;      // worker -> server: id lists (evaluation; answered at once)
constexpr int kLookupRowsTag = 114;  // server -> worker: their rows
constexpr int kHistogramBins = 32;   // staleness 0..30, and 31 or more

struct PushHead {
  int64_t step = 0;
  int64_t skipped = 0;
  double learning_rate = 0;
};

// One worker's record in each server's control window (one-sided transport). The worker writes
// its fields with one Put each ({req_seq, req_step}; {push_seq, head}; done), the server its
// own under LockLocal; a Put is whole or absent to the server's scan (exclusive vs shared lock).
struct WorkerSlot {
  int64_t req_seq = 0;       // worker: pull requests made
  int64_t req_step = 0;      // worker: the step of the newest one
  int64_t push_seq = 0;      // worker: pushes made; the gradient is in the slot when this grows
  PushHead head;             // worker: the newest push's step, whether skipped, learning rate
  int64_t done = 0;          // worker: 1 when it has finished
  int64_t granted_seq = 0;   // server: the pull request answered (parameters published)
  int64_t consumed_seq = 0;  // server: the push applied (the gradient slot is free again)
  int64_t stop_request = 0;  // worker, at server 0: 1 when it got a stop signal
  int64_t stop_at = -1;      // server 0: the step count every worker stops at, once decided
};

// A send whose buffer must live until it completes.
struct PendingSend {
  std::vector<float> data;
  comm::RequestList requests;
};

class ParameterServerStrategy final : public ReplicaStrategy {
 public:
  explicit ParameterServerStrategy(const StrategyEnv& env)
      : ReplicaStrategy(env),
        roles_(RolesOf(env.job->size(), PsOptionsOf(*env.options).ranks,
                       PsOptionsOf(*env.options).servers)),
        num_servers_(static_cast<int>(roles_.servers.size())),
        num_workers_(static_cast<int>(roles_.workers.size())),
        staleness_(PsOptionsOf(*env.options).max_staleness),
        server_(roles_.server_index(env.job->rank()) >= 0),
        rma_(PsOptionsOf(*env.options).transport == "rma") {}

  std::string name() const override { return "parameter_server"; }
  CommProfile comm_profile() const override {
    return {.waits_for = "the step's agreement",
            .blocked_on = "pulls from and pushes to the parameter servers",
            .buckets = 0,
            .knob = "spread the parameters over more servers (dist.ps_ranks, now " +
                    std::to_string(num_servers_) + ")"};
  }
  StartPoint Setup() override;
  bool trains_batches() const override { return !server_; }
  void Serve() override;
  comm::Communicator* step_comm() override { return group_.get(); }
  bool synchronous_metrics() const override { return staleness_ == 0; }
  void Finish() override;
  void RequestStop() override;
  int64_t StopTarget() override;
  EvalResult Evaluate(const pipeline::Dataset& eval) override;
  void SaveCheckpoint(int64_t steps_done, int64_t steps_per_epoch,
                      const std::string& iterator_state) override;
  void FinishReport(RunSummary* summary) override;
  std::vector<float> FinalParams() override;
  int data_parallel_size() const override { return num_workers_; }

 protected:
  double FinishGradients() override { return pull_s_; }  // gradients go out whole, unreduced
  void BeforeForward(const StepInput& in) override;
  void BeforeEvalForward(const ModelBatch& batch) override;
  void ApplyUpdate(const StepInput& in) override { Push(in, false); }
  void SkipUpdate(const StepInput& in) override { Push(in, true); }
  comm::Communicator& replicas() const override { return *group_; }
  // Each worker pushes its own batch's mean (BatchWeight).
  bool averages_over_replicas() const override { return false; }
  std::string WriteCheckpoint(const TrainingState& state) override;
  // A server's copy of the model only seeds its slice: on the CPU, where its optimizer runs.
  ModelOptions ReplicaModelOptions() const override {
    ModelOptions m = options().model;
    if (server_) m.device = Device::kCpu;
    m.remote_tables = PsOptionsOf(options()).sparse_tables;
    return m;
  }

 private:
  int ServerRank(int k) const { return roles_.servers[static_cast<size_t>(k)]; }
  void LogRoles() const;
  // Worker side.
  // `x`: the batch whose rows of the sparse tables come with the parameters (null: none).
  void Pull(int64_t step, const Tensor* x = nullptr);
  void Lookup(const Tensor& x);  // the rows of an evaluation batch
  void Push(const StepInput& in, bool skipped);
  void WaitPushes();
  void FetchServerState();
  // Where pulled parameters land (then copied onto the device: Landed) and pushed gradients
  // leave from (StagedGrads, valid until the pushes complete): host copies for a worker on a
  // device, the arena itself on the CPU (HostStaging passes through).
  float* PullBuffer();
  void Landed();
  const float* StagedGrads();
  // Server side.
  void MakeServerState(int64_t first_step);
  void Handle(const comm::Communicator::Envelope& e);
  void OnPush(int source);
  void Apply(size_t worker, const PushHead& head, const float* gradient, const float* rows);
  void MakeSparse();
  void OnLookup(int source, size_t bytes);
  std::vector<float> DenseFinalParams();
  std::vector<float> TablesInArenaOrder(const std::vector<float>& dense);
  void Grant(int source);
  void AnswerPulls();
  void SendTo(int worker, int tag, std::vector<float> data);
  void CompleteSends(bool wait);
  int64_t SlowestApplied() const;
  // Who held pulls wait for: "worker rank 1 is behind (steps up to 5 applied) and the pulls of
  // worker rank(s) 0 wait for it (dist.max_staleness = 1)"; "" when no pull is held.
  std::string HeldPullsText() const;
  // Logs once (a warning) who held pulls wait for, early: the watchdog may be minutes away.
  void NoteHeldPulls();
  // How long a worker waits for a server: longer than the server's own watchdog, so that a
  // server holding pulls for a worker that is behind ends the job first, naming that worker.
  double WorkerWaitSeconds() const;
  template <typename T>
  T RecvValue(int source, int tag);
  // One-sided transport (parameter_server_rma.cpp).
  void MakeWindows();
  void PullRma(int64_t step);
  void PushRma(bool skipped);
  void FinishRma();
  bool ScanWindows();
  void PublishParams();
  size_t SlotOffset(int worker) const { return static_cast<size_t>(worker) * sizeof(WorkerSlot); }
  template <typename Done>
  void WaitFor(int server, const char* what, Done done) const;

  const PsRoles roles_;
  const int num_servers_, num_workers_;
  const int64_t staleness_;
  const bool server_;
  const bool rma_;
  std::unique_ptr<comm::Communicator> ps_;     // every rank: the protocol
  std::unique_ptr<comm::Communicator> group_;  // the workers (or the servers, on a server)
  std::vector<ServerSlice> slices_;
  std::unique_ptr<comm::RmaWindow> params_win_, grads_win_, control_win_;  // rma_ only
  // Worker.
  int64_t pull_step_ = 0, last_step_ = -1;
  double pull_s_ = 0;
  PushHead head_;
  comm::RequestList pushes_;
  // The worker's model's host staging, one for each direction (a pull may land while a push
  // is in flight), made at Setup; `pulled_` the last PullBuffer.
  HostStaging pull_staging_, push_staging_;
  float* pulled_ = nullptr;
  int64_t pull_seq_ = 0, push_seq_ = 0;
  int64_t stop_note_ = 1, stop_target_ = -1;
  comm::RequestList stop_notes_;  // the request to server 0, completed in Finish
  bool requested_ = false;
  // Server.
  ServerSlice mine_;
  Arena<float> slice_;
  std::unique_ptr<Optimizer> slice_optimizer_;
  std::vector<float> incoming_, sum_;
  int pushes_this_step_ = 0;
  int64_t updates_ = 0;
  int done_ = 0;
  std::vector<int64_t> applied_, pulled_at_;
  std::vector<int64_t> seen_req_, done_seen_;  // rma_: per worker
  // Server 0: the newest step each worker has asked parameters for, and the stop it decided.
  std::vector<int64_t> latest_pull_;
  int64_t stop_at_ = -1;
  comm::RequestList stop_sends_;
  void DecideStop();
  std::deque<std::pair<int, int64_t>> pending_pulls_;  // (worker, step)
  Clock::time_point held_since_{};                     // when pending_pulls_ last became non-empty
  bool held_noted_ = false;
  std::deque<PendingSend> sends_;
  std::vector<double> histogram_ = std::vector<double>(kHistogramBins, 0.0);
  // Sparse tables (sparse_tables.hpp): the worker's windows and what its pushes send; the
  // server's rows and each worker's id lists of its latest pull.
  bool sparse_ = false;
  std::unique_ptr<SparseWindows> windows_;
  std::vector<std::vector<int64_t>> requests_;  // per server: the pull's step and id lists
  std::vector<std::vector<float>> grad_rows_;   // per server: the push's gradient rows
  std::unique_ptr<SparseShard> shard_;
  std::vector<IdLists> pull_ids_;  // per worker (each one list per table)
  std::vector<float> incoming_rows_;
  // Worker: bytes it sent and received in its steps' pulls and pushes, the steps, and their
  // windows' rows (summary.json wire_mib_per_step, sparse_rows_per_step).
  double wire_bytes_ = 0, wire_steps_ = 0, window_rows_ = 0;
  std::unique_ptr<comm::Communicator> ckpt_;  // sparse tables: the chief and the servers
  double max_gap_ = 0, pushes_counted_ = 0, staleness_sum_ = 0;
};

}  // namespace shardflow::train::ps
