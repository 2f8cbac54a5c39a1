// ModelPool and Replicas: requests answered by replicas while another thread reloads the model
// over and over; no request fails or is dropped, every answer comes from a whole snapshot (its
// probabilities are the softmax of that version's model), and versions only grow. Run under
// ThreadSanitizer by scripts/tsan_tests.sh.
#include "apps/serve/model_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

namespace shardflow::serve {
namespace model_pool_test {

Signature TinySignature() {
  Signature sig;
  sig.input_name = "x";
  sig.dtype = DType::kFloat32;
  sig.shape = {4};
  sig.batch = {.input_feature = "x", .label_feature = "", .input_shape = {4}, .scale = 1.0};
  sig.task = apps::Task::kClassify;
  sig.output_width = 3;
  return sig;
}

// Snapshots of a 4 -> 3 dense model, `replicas` copies, numbered 1, 2, ... by load.
ModelPool::Loader CountingLoader(int replicas, std::atomic<int64_t>* loads) {
  return [replicas, loads] {
    auto s = std::make_shared<ModelSnapshot>();
    s->version = loads->fetch_add(1) + 1;
    s->checkpoint = std::string("memory");
    for (int i = 0; i < replicas; ++i) {
      s->replicas.push_back(std::make_unique<Sequential<float>>("dense:3", Shape{4}));
    }
    return s;
  };
}

TEST(ModelPoolThreads, ReloadOnlyWhenTheNewestChanges) {
  std::atomic<int64_t> loads{0};
  std::string newest("a");
  ModelPool pool(CountingLoader(1, &loads), [&newest] { return newest; });
  EXPECT_EQ(pool.version(), 1);
  EXPECT_FALSE(pool.Reload(false));
  newest = std::string("b");
  EXPECT_TRUE(pool.Reload(false));
  EXPECT_EQ(pool.version(), 2);
  EXPECT_TRUE(pool.Reload(true));
  EXPECT_EQ(pool.version(), 3);
}

TEST(ModelPoolThreads, ReloadUnderLoadDropsNothing) {
  constexpr int kClients = 6;
  constexpr int kRequests = 60;
  std::atomic<int64_t> loads{0};
  const Signature sig = TinySignature();
  ModelPool pool(CountingLoader(2, &loads), [] { return std::string("same"); });
  BatchQueue queue({.max_batch_size = 8, .batch_timeout_us = 300, .capacity = 1024});
  ServeMetrics metrics;
  Replicas replicas(queue, pool, sig, metrics, 2, /*intra_op_threads=*/1);
  std::atomic<bool> stop{false};
  std::thread reloader([&] {
    while (!stop.load()) {
      pool.Reload(true);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      int64_t last_version = 0;
      for (int i = 0; i < kRequests; ++i) {
        auto job = std::make_shared<Job>();
        job->rows = Tensor(DType::kFloat32, {2, 4});
        for (int j = 0; j < 8; ++j)
          job->rows.data<float>()[j] = 0.1f * static_cast<float>(c + i + j);
        auto done = job->done.get_future();
        ASSERT_EQ(queue.Push(job), BatchQueue::PushResult::kQueued);
        const JobResult r = done.get();
        ASSERT_TRUE(r.error.empty()) << r.error;
        ASSERT_EQ(r.results.classes.size(), 2u);
        ASSERT_EQ(r.results.values.size(), 6u);
        for (int row = 0; row < 2; ++row) {
          double sum = 0;
          for (int k = 0; k < 3; ++k) sum += r.results.values[static_cast<size_t>(row * 3 + k)];
          EXPECT_NEAR(sum, 1.0, 1e-5);
        }
        EXPECT_GE(r.version, last_version);
        last_version = r.version;
        answered.fetch_add(1);
      }
    });
  }
  for (auto& t : clients) t.join();
  stop = true;
  reloader.join();
  queue.Close();
  replicas.Join();
  EXPECT_EQ(answered.load(), kClients * kRequests);
  EXPECT_GT(loads.load(), 2);
}

}  // namespace model_pool_test
}  // namespace shardflow::serve
