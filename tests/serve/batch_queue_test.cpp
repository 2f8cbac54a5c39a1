// BatchQueue: batches grouped up to max_batch_size or the timeout, the capacity bound, close
// draining every queued job; and the threaded run (several producers, two consumers: every job
// handed out exactly once) that scripts/tsan_tests.sh runs under ThreadSanitizer.
#include "apps/serve/batch_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace shardflow::serve {
namespace batch_queue_test {

std::shared_ptr<Job> MakeJob(int64_t rows, float tag = 0) {
  auto job = std::make_shared<Job>();
  job->rows = Tensor(DType::kFloat32, {rows, 1});
  for (int64_t i = 0; i < rows; ++i) job->rows.data<float>()[i] = tag;
  return job;
}

int64_t Rows(const std::vector<std::shared_ptr<Job>>& batch) {
  int64_t n = 0;
  for (const auto& j : batch) n += j->num_rows();
  return n;
}

TEST(BatchQueueThreads, FullBatchGoesAtOnceWithoutWaitingForTheTimeout) {
  BatchQueue q({.max_batch_size = 4, .batch_timeout_us = 10'000'000, .capacity = 100});
  for (int i = 0; i < 6; ++i) ASSERT_EQ(q.Push(MakeJob(1)), BatchQueue::PushResult::kQueued);
  std::vector<std::shared_ptr<Job>> batch;
  const auto start = Clock::now();
  ASSERT_TRUE(q.PopBatch(&batch));
  EXPECT_EQ(Rows(batch), 4);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(q.depth(), 2);
}

TEST(BatchQueueThreads, PartialBatchLeavesAfterTheTimeout) {
  BatchQueue q({.max_batch_size = 64, .batch_timeout_us = 20'000, .capacity = 100});
  ASSERT_EQ(q.Push(MakeJob(3)), BatchQueue::PushResult::kQueued);
  std::vector<std::shared_ptr<Job>> batch;
  const auto start = Clock::now();
  ASSERT_TRUE(q.PopBatch(&batch));
  const auto waited = Clock::now() - start;
  EXPECT_EQ(Rows(batch), 3);
  EXPECT_GE(waited, std::chrono::microseconds(15'000));
  EXPECT_LT(waited, std::chrono::seconds(2));
}

TEST(BatchQueueThreads, JobsStayWholeAndALargeOneRunsAlone) {
  BatchQueue q({.max_batch_size = 4, .batch_timeout_us = 0, .capacity = 100});
  q.Push(MakeJob(3));
  q.Push(MakeJob(2));  // 3 + 2 > 4: next batch
  q.Push(MakeJob(9));  // larger than max_batch_size: alone
  std::vector<std::shared_ptr<Job>> batch;
  ASSERT_TRUE(q.PopBatch(&batch));
  EXPECT_EQ(Rows(batch), 3);
  ASSERT_TRUE(q.PopBatch(&batch));
  EXPECT_EQ(Rows(batch), 2);
  ASSERT_TRUE(q.PopBatch(&batch));
  EXPECT_EQ(Rows(batch), 9);
}

TEST(BatchQueueThreads, CapacityRefusesInsteadOfGrowing) {
  BatchQueue q({.max_batch_size = 4, .batch_timeout_us = 0, .capacity = 5});
  EXPECT_EQ(q.Push(MakeJob(4)), BatchQueue::PushResult::kQueued);
  EXPECT_EQ(q.Push(MakeJob(2)), BatchQueue::PushResult::kFull);
  EXPECT_EQ(q.Push(MakeJob(1)), BatchQueue::PushResult::kQueued);
  EXPECT_EQ(q.depth(), 5);
  BatchQueue empty({.max_batch_size = 4, .batch_timeout_us = 0, .capacity = 5});
  EXPECT_EQ(empty.Push(MakeJob(7)), BatchQueue::PushResult::kQueued);  // alone: taken
}

TEST(BatchQueueThreads, CloseDrainsThenEnds) {
  BatchQueue q({.max_batch_size = 2, .batch_timeout_us = 10'000'000, .capacity = 100});
  q.Push(MakeJob(1));
  q.Close();
  EXPECT_EQ(q.Push(MakeJob(1)), BatchQueue::PushResult::kClosed);
  std::vector<std::shared_ptr<Job>> batch;
  const auto start = Clock::now();
  ASSERT_TRUE(q.PopBatch(&batch));  // closing: no wait for the timeout
  EXPECT_EQ(Rows(batch), 1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(q.PopBatch(&batch));
}

TEST(BatchQueueThreads, FlushEndsTheWaitForAFullerBatch) {
  BatchQueue q({.max_batch_size = 8, .batch_timeout_us = 10'000'000, .capacity = 100});
  q.Push(MakeJob(1));
  std::thread flusher([&q] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.Flush();
  });
  std::vector<std::shared_ptr<Job>> batch;
  const auto start = Clock::now();
  ASSERT_TRUE(q.PopBatch(&batch));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(Rows(batch), 1);
  EXPECT_EQ(q.Push(MakeJob(1)), BatchQueue::PushResult::kQueued);  // still accepting
  flusher.join();
}

TEST(BatchQueueThreads, ProducersAndConsumersHandEveryJobOutOnce) {
  constexpr int kProducers = 4;
  constexpr int kJobs = 300;
  BatchQueue q({.max_batch_size = 8, .batch_timeout_us = 200, .capacity = 64});
  std::vector<std::atomic<int>> seen(kProducers * kJobs);
  std::atomic<int64_t> max_rows{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < 2; ++c) {
    consumers.emplace_back([&] {
      std::vector<std::shared_ptr<Job>> batch;
      while (q.PopBatch(&batch)) {
        int64_t rows = Rows(batch);
        int64_t prev = max_rows.load();
        while (rows > prev && !max_rows.compare_exchange_weak(prev, rows)) {
        }
        for (const auto& job : batch) {
          seen[static_cast<size_t>(job->rows.data<float>()[0])].fetch_add(1);
          job->done.set_value(JobResult{});
        }
      }
    });
  }
  std::vector<std::thread> producers;
  std::atomic<int> refused{0};
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kJobs; ++i) {
        for (;;) {  // a full queue refuses: retry as a client answered 503 would
          auto job = MakeJob(1 + i % 3, static_cast<float>(p * kJobs + i));
          auto done = job->done.get_future();
          if (q.Push(job) == BatchQueue::PushResult::kQueued) {
            done.get();
            break;
          }
          refused.fetch_add(1);
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : producers) t.join();
  q.Close();
  for (auto& t : consumers) t.join();
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "job " << i;
  EXPECT_LE(max_rows.load(), 8);
  EXPECT_EQ(q.depth(), 0);
}

}  // namespace batch_queue_test
}  // namespace shardflow::serve
