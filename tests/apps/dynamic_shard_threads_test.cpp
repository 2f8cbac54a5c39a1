// DynamicShard with threads of one process as workers (apps/train/dynamic_shard.hpp): real
// TFRecord pipelines reading the records each worker claims from one in-process claim source.
// Every record once per epoch over passes that end at the same fences on every worker; a worker
// much slower than the other takes few batches and holds at most one claimed batch it has not
// begun; a stop lowers the fence, both workers end there, and nothing at or past it is trained.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "apps/train/dynamic_shard.hpp"
#include "io/example.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/tfrecord_writer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::train {
namespace dynamic_shard_threads_test {

constexpr int64_t kRecords = 45;  // 8 records a batch: 6 batches an epoch, the last of 5

// One process's stand-in for comm::ClaimCounter (same contract, a mutex for the MPI lock).
class LocalClaims {
 public:
  comm::ClaimCounter::Claim Next() {
    std::lock_guard lock(mu_);
    return {.index = next_++, .fence = fence_};
  }
  comm::ClaimCounter::Claim Peek() {
    std::lock_guard lock(mu_);
    return {.index = next_, .fence = fence_};
  }
  void LowerFence(int64_t value) {
    std::lock_guard lock(mu_);
    fence_ = std::min(fence_, value);
  }

 private:
  std::mutex mu_;
  int64_t next_ = 0;
  int64_t fence_ = comm::ClaimCounter::kNoFence;
};

class SharedClaims final : public ClaimSource {
 public:
  explicit SharedClaims(LocalClaims* c) : c_(c) {}
  comm::ClaimCounter::Claim Next() override { return c_->Next(); }
  comm::ClaimCounter::Claim Peek() override { return c_->Peek(); }
  void LowerFence(int64_t value) override { c_->LowerFence(value); }

 private:
  LocalClaims* c_;
};

class DynamicShardThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = (dir_ / "d.tfrecord").string();
    io::TFRecordWriter w(path);
    for (int64_t r = 0; r < kRecords; ++r) {
      io::ExampleBuilder b;
      b.AddInt64("label", {r});
      w.Write(b.Serialize());
    }
    w.Close();
    spec_.data.files = {path};
    spec_.data.shuffle_buffer = 0;
    spec_.data.parallel_calls = 1;
    spec_.features = {"label:int64:int64:scalar"};
    factories_.all_ids = [this] { return pipeline::AllRecordIds(spec_); };
    factories_.provided = [this](std::function<std::optional<int64_t>()> next, int64_t batch) {
      pipeline::InputSpec s = spec_;
      s.data.batch_size = batch;
      s.data.epochs = 1;
      s.data.prefetch = 2;
      s.data.record_provider = std::move(next);
      return pipeline::BuildInputPipeline(s, 0, 1);
    };
  }

  std::unique_ptr<DynamicShard> Make(const ClaimPlan& plan, int64_t end, int64_t seed = 5) {
    return std::make_unique<DynamicShard>(factories_, std::make_unique<SharedClaims>(&claims_),
                                          plan, factories_.all_ids(), seed, 0, 0, end);
  }

  testing::ScratchDir dir_{"dynamic_shard_threads"};
  pipeline::InputSpec spec_;
  InputFactories factories_;
  LocalClaims claims_;
};

struct Trained {
  std::mutex mu;
  std::map<int64_t, std::map<int64_t, int>> per_epoch;  // epoch -> label -> times
  std::map<int, int64_t> batches;                       // worker -> batches
  void Add(int worker, int64_t epoch, const pipeline::Element& batch) {
    std::lock_guard lock(mu);
    const Tensor& labels = batch.Get("label");
    for (int64_t i = 0; i < labels.dim(0); ++i) ++per_epoch[epoch][labels.data<int64_t>()[i]];
    ++batches[worker];
  }
};

TEST_F(DynamicShardThreads, EveryRecordOncePerEpochAtSharedFences) {
  const ClaimPlan plan = ClaimPlan::Make(kRecords, 8, 2);
  ASSERT_EQ(plan.per_epoch, 6);
  const int64_t end = 3 * plan.per_epoch;
  Trained trained;
  std::barrier meet(2);
  std::vector<int64_t> fences[2];
  auto worker = [&](int w) {
    std::unique_ptr<DynamicShard> shard = Make(plan, end);
    meet.arrive_and_wait();
    pipeline::Element batch;
    int64_t claim = -1;
    while (true) {
      while (shard->Next(&batch, &claim)) {
        trained.Add(w, plan.EpochOf(claim), batch);
        if (w == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      fences[w].push_back(shard->fence());
      meet.arrive_and_wait();
      if (shard->fence() >= end) break;
      shard->NextPass();
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(fences[0], (std::vector<int64_t>{6, 12, 18}));
  EXPECT_EQ(fences[1], fences[0]);
  ASSERT_EQ(trained.per_epoch.size(), 3u);
  for (const auto& [epoch, labels] : trained.per_epoch) {
    EXPECT_EQ(labels.size(), static_cast<size_t>(kRecords)) << "epoch " << epoch;
    for (const auto& [label, times] : labels) EXPECT_EQ(times, 1) << epoch << ":" << label;
  }
  // The slow worker (50 ms a batch) holds at most one batch besides the one it trains.
  EXPECT_GT(trained.batches[0], trained.batches[1]);
  EXPECT_LE(trained.batches[1], 3 * 3);
}

TEST_F(DynamicShardThreads, StopLowersTheFenceForBoth) {
  const ClaimPlan plan = ClaimPlan::Make(kRecords * 1, 2, 2);  // 23 batches an epoch
  const int64_t end = plan.per_epoch;
  Trained trained;
  std::barrier meet(2);
  std::atomic<int64_t> fence[2];
  std::atomic<int64_t> most[2] = {-1, -1};
  std::atomic<bool> stop_requested{false};
  auto worker = [&](int w) {
    std::unique_ptr<DynamicShard> shard = Make(plan, end, -1);
    meet.arrive_and_wait();
    pipeline::Element batch;
    int64_t claim = -1;
    int n = 0;
    while (shard->Next(&batch, &claim)) {
      trained.Add(w, plan.EpochOf(claim), batch);
      most[w] = std::max(most[w].load(), claim);
      if (w == 0 && ++n == 3) {
        shard->RequestStop();
        stop_requested = true;
      }
      // Worker 1 trains one batch, then waits for the stop (at most 10 s): on a loaded machine
      // worker 0 could otherwise be descheduled while worker 1 claims the whole epoch, and
      // there would be no fence left to lower (the test once failed that way in a full run).
      if (w == 1) {
        for (int i = 0; i < 10000 && !stop_requested; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    fence[w] = shard->fence();
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(fence[0].load(), fence[1].load());
  EXPECT_LT(fence[0].load(), end);
  EXPECT_LT(std::max(most[0].load(), most[1].load()), fence[0].load());
  // Every claim below the fence trained once: its records are the first 2 * fence in file order.
  int64_t records = 0;
  for (const auto& [label, times] : trained.per_epoch[0]) {
    EXPECT_EQ(times, 1);
    EXPECT_LT(label, 2 * fence[0].load());
    ++records;
  }
  EXPECT_EQ(records, 2 * fence[0].load());
}

}  // namespace dynamic_shard_threads_test
}  // namespace shardflow::train
