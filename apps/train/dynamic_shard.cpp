#include "apps/train/dynamic_shard.hpp"

#include <algorithm>
#include <sstream>

#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/random.hpp"

namespace shardflow::train {

ClaimPlan ClaimPlan::Make(int64_t records, int64_t batch, int workers) {
  if (records <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "dist.sharding = dynamic: no training records",
                {.key = "data.files"});
  }
  ClaimPlan p;
  p.records = records;
  p.batch = std::max<int64_t>(1, batch);
  p.per_epoch = (records + p.batch - 1) / p.batch;
  p.workers = std::max(1, workers);
  p.steps_per_epoch = (p.per_epoch + p.workers - 1) / p.workers;
  return p;
}

int64_t ClaimPlan::StepsDone(int64_t fence) const {
  const int64_t epoch = fence / per_epoch, k = fence % per_epoch;
  return epoch * steps_per_epoch + (k + workers - 1) / workers;
}

int64_t ClaimPlan::FenceAtStep(int64_t step) const {
  const int64_t epoch = step / steps_per_epoch, k = step % steps_per_epoch;
  return epoch * per_epoch + std::min(per_epoch, k * workers);
}

int64_t ClaimPlan::NextFence(int64_t fence, int64_t every_steps, int64_t end) const {
  int64_t next = std::min(end, (fence / per_epoch + 1) * per_epoch);
  if (every_steps > 0) {
    // The first multiple of every_steps whose fence lies past `fence`.
    int64_t step = (StepOf(fence) / every_steps + 1) * every_steps;
    while (FenceAtStep(step) <= fence) step += every_steps;
    next = std::min(next, FenceAtStep(step));
  }
  return std::max(next, fence + 1);
}

std::string EncodeDynamicState(int64_t fence, const ClaimPlan& plan) {
  return "dynamic " + std::to_string(fence) + " " + std::to_string(plan.records) + " " +
         std::to_string(plan.batch);
}

bool DecodeDynamicState(const std::string& state, int64_t* fence, int64_t* records,
                        int64_t* batch) {
  if (state.rfind("dynamic ", 0) != 0) return false;
  std::istringstream in(state.substr(8));
  if (!(in >> *fence >> *records >> *batch) || *fence < 0 || *records <= 0 || *batch <= 0) {
    throw Error(ErrorCode::kDataLoss, "the checkpoint's dynamic-sharding state is damaged: '" +
                                          state.substr(0, 64) + "'");
  }
  return true;
}

namespace {

class CounterClaims final : public ClaimSource {
 public:
  CounterClaims(const comm::Communicator& workers, int64_t start) : counter_(workers, 0, start) {}
  comm::ClaimCounter::Claim Next() override { return counter_.Next(); }
  comm::ClaimCounter::Claim Peek() override { return counter_.Peek(); }
  void LowerFence(int64_t value) override { counter_.LowerFence(value); }

 private:
  comm::ClaimCounter counter_;
};

}  // namespace

std::unique_ptr<ClaimSource> JobClaims(const comm::Communicator& workers, int64_t start) {
  return std::make_unique<CounterClaims>(workers, start);
}

DynamicShard::DynamicShard(const InputFactories& factories, std::unique_ptr<ClaimSource> claims,
                           ClaimPlan plan, std::vector<int64_t> order, int64_t shuffle_seed,
                           int64_t start_fence, int64_t every_steps, int64_t end_fence)
    : factories_(factories),
      plan_(plan),
      shuffle_seed_(shuffle_seed),
      every_steps_(every_steps),
      end_(end_fence),
      counter_(std::move(claims)),
      base_order_(std::move(order)) {
  if (static_cast<int64_t>(base_order_.size()) != plan_.records) {
    throw Error(ErrorCode::kInternal, "dynamic sharding: " + std::to_string(base_order_.size()) +
                                          " record ids for a plan of " +
                                          std::to_string(plan_.records));
  }
  MutexLock lock(mu_);
  fence_ = plan_.NextFence(start_fence, every_steps_, end_);
}

DynamicShard::~DynamicShard() { CancelPass(); }

// The pipeline's threads may wait in NextRecord: released before they are joined.
void DynamicShard::CancelPass() {
  {
    MutexLock lock(mu_);
    cancelled_ = true;
  }
  taken_.NotifyAll();
  pass_.reset();
  MutexLock lock(mu_);
  cancelled_ = false;
}

const std::vector<int64_t>& DynamicShard::OrderOf(int64_t epoch) {
  auto it = orders_.find(epoch);
  if (it != orders_.end()) return it->second;
  while (!orders_.empty() && orders_.begin()->first < epoch) orders_.erase(orders_.begin());
  std::vector<int64_t> order = base_order_;
  if (shuffle_seed_ >= 0) {  // Fisher-Yates, keyed by (seed, epoch): the same on every worker
    for (size_t i = order.size(); i > 1; --i) {
      const uint64_t r = RandomBits(static_cast<uint64_t>(shuffle_seed_),
                                    0x64796e616d6963ULL + static_cast<uint64_t>(epoch), i);
      std::swap(order[i - 1], order[r % i]);
    }
  }
  return orders_.emplace(epoch, std::move(order)).first->second;
}

void DynamicShard::Enqueue(int64_t claim) {
  const std::vector<int64_t>& order = OrderOf(plan_.EpochOf(claim));
  const int64_t k = claim % plan_.per_epoch;
  const int64_t begin = k * plan_.batch, end = std::min(plan_.records, begin + plan_.batch);
  for (int64_t i = begin; i < end; ++i) records_.push_back(order[static_cast<size_t>(i)]);
  claims_.push_back(claim);
  last_ = claim;
}

// The pipeline's source: the records of this worker's claims, one claim after another, until a
// claim at or past the fence (held for the next pass).
std::optional<int64_t> DynamicShard::NextRecord() {
  MutexLock lock(mu_);
  while (records_.empty()) {
    // The claim before the fence is read: every later one is at or past it (an epoch's last,
    // short batch must end the pass to be emitted, before the loop can take it).
    if (last_ >= 0 && last_ + 1 >= fence_) closed_ = true;
    while (claims_.size() >= kClaimsAhead && !closed_ && !cancelled_) taken_.Wait(mu_);
    if (closed_ || cancelled_) return std::nullopt;
    comm::ClaimCounter::Claim c;
    if (held_) {
      c.index = *held_;
      held_.reset();
    } else {
      c = counter_->Next();
    }
    fence_ = std::min(fence_, c.fence);  // a stop signal lowered it
    if (c.index >= fence_) {
      held_ = c.index;
      closed_ = true;
      return std::nullopt;
    }
    Enqueue(c.index);
  }
  const int64_t id = records_.front();
  records_.pop_front();
  return id;
}

bool DynamicShard::Next(pipeline::Element* batch, int64_t* claim) {
  if (!pass_) {
    pass_ = std::make_unique<pipeline::PipelineIterator>(
        factories_.provided([this] { return NextRecord(); }, plan_.batch).MakeIterator());
  }
  if (!pass_->Next(batch)) return false;
  MutexLock lock(mu_);
  if (claims_.empty()) {
    throw Error(ErrorCode::kInternal, "dynamic sharding: a batch without a claim");
  }
  *claim = claims_.front();
  claims_.pop_front();
  taken_.NotifyAll();
  const int64_t k = *claim % plan_.per_epoch;
  const int64_t expected = std::min(plan_.batch, plan_.records - k * plan_.batch);
  const int64_t rows = batch->features.empty() ? 0 : batch->features.front().second.dim(0);
  if (rows != expected) {
    throw Error(ErrorCode::kDataLoss,
                "dynamic sharding: batch " + std::to_string(k) + " of epoch " +
                    std::to_string(plan_.EpochOf(*claim)) + " has " + std::to_string(rows) +
                    " records, not " + std::to_string(expected) + ": a record could not be read",
                {.hint = "check the data files (data.on_corrupt = skip drops records)"});
  }
  return true;
}

int64_t DynamicShard::fence() const {
  MutexLock lock(mu_);
  return fence_;
}

void DynamicShard::RequestStop() {
  MutexLock lock(mu_);
  counter_->LowerFence(counter_->Peek().index);
}

bool DynamicShard::Meet(comm::Communicator& workers, bool stop) {
  int64_t v[3] = {fence(), -fence(), stop ? 1 : 0};
  comm::AllreduceInt64(workers, v, 3, comm::ReduceOp::kMax);
  if (v[0] != -v[1]) {
    throw Error(ErrorCode::kInternal, "dynamic sharding: workers met at claims " +
                                          std::to_string(-v[1]) + " and " + std::to_string(v[0]));
  }
  return v[2] != 0;
}

void DynamicShard::NextPass() {
  CancelPass();
  MutexLock lock(mu_);
  if (!records_.empty() || !claims_.empty()) {
    throw Error(ErrorCode::kInternal, "dynamic sharding: claims left at a fence");
  }
  closed_ = false;
  last_ = -1;
  fence_ = plan_.NextFence(fence_, every_steps_, end_);
}

}  // namespace shardflow::train
