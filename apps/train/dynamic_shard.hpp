// DynamicShard: dynamic sharding of the training input among asynchronous parameter-server
// workers (dist.sharding = dynamic; docs/design.md decision 44).
//
// Claims. An epoch of N records is U = ceil(N / B) batches of B records (the last one may be
// short), cut from a permutation of the records that changes every epoch (seeded by data.seed
// and the epoch; file order when data.shuffle_buffer = 0). Claim c of a job-wide counter
// (comm::ClaimCounter, held by worker 0) is batch c mod U of epoch c div U. A worker's pipeline
// claims a batch when it needs records, reads that batch's records by offset and trains on it:
// a worker twice as fast claims twice as many, and no worker waits for a slow one's shard.
// Every batch of an epoch is claimed exactly once: every record once per epoch, none left out.
// Steps. "Nominal" steps number the batches as static sharding would: steps_per_epoch =
// ceil(U / W) for W workers, claim k of epoch e is step e * spe + k / W. The learning-rate
// schedule, metrics lines, max_steps and checkpoints count nominal steps, so a config means
// the same under either sharding.
// Meetings. Workers meet (collectives over the workers) at fences: claim counts such that every
// claim below has been trained and none at or above. Fences come at every epoch's end
// (evaluation), every checkpoint.every_steps, the end of training, and on a stop signal (the
// signalled worker lowers the counter's fence to the count so far; each other worker sees it
// with its next claim, which it holds for after the meeting). At a meeting the whole input state
// is the fence: a checkpoint stores it, and --resume restarts the counter there, on any worker
// count with the same per-worker batch.
// Claims ahead. A worker holds at most kClaimsAhead claimed batches it has not started to train
// (the pipeline's read-ahead waits for the loop to take one), so a slow worker keeps few of
// them from the others, and what it holds at a fence is what the others wait for.
// Thread-safety: NextRecord runs on the pipeline's thread, the rest on the loop's; mu_ guards
// what both touch (the counter is used only under it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/train/rank_input.hpp"
#include "comm/claim_counter.hpp"
#include "comm/communicator.hpp"
#include "core/thread_annotations.hpp"
#include "io/pipeline/dataset.hpp"

namespace shardflow::train {

// The claim space of a run: N records a epoch, B per claim, W workers.
struct ClaimPlan {
  int64_t records = 0;          // N
  int64_t batch = 1;            // B
  int64_t per_epoch = 1;        // U = ceil(N / B)
  int64_t workers = 1;          // W
  int64_t steps_per_epoch = 1;  // nominal: ceil(U / W)
  // Throws Error(kInvalidArgument) when there are no records.
  static ClaimPlan Make(int64_t records, int64_t batch, int workers);
  int64_t EpochOf(int64_t claim) const { return claim / per_epoch; }
  int64_t StepOf(int64_t claim) const {
    return EpochOf(claim) * steps_per_epoch + (claim % per_epoch) / workers;
  }
  // Nominal steps done when every claim below `fence` is trained.
  int64_t StepsDone(int64_t fence) const;
  // The first claim of nominal step `step` (the fence after steps [0, step)).
  int64_t FenceAtStep(int64_t step) const;
  // The first fence after `fence`: the next epoch end, checkpoint (every `every_steps` nominal
  // steps; 0: none) or `end`, whichever comes first.
  int64_t NextFence(int64_t fence, int64_t every_steps, int64_t end) const;
};

// What a checkpoint keeps (the iterator state of SavedInput::pipeline): "dynamic F N B".
std::string EncodeDynamicState(int64_t fence, const ClaimPlan& plan);
// True when `pipeline_state` is one; then *fence, *records and *batch are set.
bool DecodeDynamicState(const std::string& pipeline_state, int64_t* fence, int64_t* records,
                        int64_t* batch);

// Where claims come from: the job-wide comm::ClaimCounter (JobClaims), or any source with its
// contract (the tests: threads of one process as workers). Calls come under DynamicShard's lock.
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  virtual comm::ClaimCounter::Claim Next() = 0;
  virtual comm::ClaimCounter::Claim Peek() = 0;
  virtual void LowerFence(int64_t value) = 0;
};
// Collective over `workers`: a counter on worker 0 starting at `start`.
std::unique_ptr<ClaimSource> JobClaims(const comm::Communicator& workers, int64_t start);

class DynamicShard {
 public:
  static constexpr size_t kClaimsAhead = 1;
  // `claims` start at `start_fence`. `order`: every record id, in file order; `shuffle_seed` <
  // 0 keeps that order every epoch. The first pass runs to the first fence after start_fence.
  DynamicShard(const InputFactories& factories, std::unique_ptr<ClaimSource> claims, ClaimPlan plan,
               std::vector<int64_t> order, int64_t shuffle_seed, int64_t start_fence,
               int64_t every_steps, int64_t end_fence);
  ~DynamicShard();

  // The next batch of this pass and its claim; false when the pass reached its fence.
  bool Next(pipeline::Element* batch, int64_t* claim);
  // The fence this pass ends at (after Next returned false: the one reached).
  int64_t fence() const;
  // A stop signal on this worker: every worker meets at the claims handed out so far.
  void RequestStop();
  // Collective over the workers, after Next returned false: checks that every worker reached
  // the same fence (Error(kInternal) otherwise) and ORs `stop` over them.
  bool Meet(comm::Communicator& workers, bool stop);
  // Opens the pass to the next fence.
  void NextPass();
  const ClaimPlan& plan() const { return plan_; }
  int64_t end_fence() const { return end_; }

 private:
  std::optional<int64_t> NextRecord() EXCLUDES(mu_);
  void CancelPass() EXCLUDES(mu_);
  void Enqueue(int64_t claim) REQUIRES(mu_);
  const std::vector<int64_t>& OrderOf(int64_t epoch) REQUIRES(mu_);

  const InputFactories& factories_;
  const ClaimPlan plan_;
  const int64_t shuffle_seed_, every_steps_, end_;
  std::unique_ptr<ClaimSource> counter_;
  std::unique_ptr<pipeline::PipelineIterator> pass_;
  mutable Mutex mu_;
  CondVar taken_;  // the loop took a claim's batch (or the pass is cancelled)
  const std::vector<int64_t> base_order_;
  std::map<int64_t, std::vector<int64_t>> orders_ GUARDED_BY(mu_);  // epoch -> permutation
  std::deque<int64_t> records_ GUARDED_BY(mu_);                     // of the claim being read
  std::deque<int64_t> claims_ GUARDED_BY(mu_);                      // read, not yet taken by Next
  std::optional<int64_t> held_ GUARDED_BY(mu_);                     // a claim at or past the fence
  int64_t fence_ GUARDED_BY(mu_) = 0;
  int64_t last_ GUARDED_BY(mu_) = -1;       // the last claim this pass read
  bool closed_ GUARDED_BY(mu_) = false;     // the pass reached its fence
  bool cancelled_ GUARDED_BY(mu_) = false;  // the pass is being torn down
};

}  // namespace shardflow::train
