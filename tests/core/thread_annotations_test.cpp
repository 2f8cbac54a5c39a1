// Mutex, MutexLock, ReleasableMutexLock and CondVar (core/thread_annotations.hpp): the lock is
// really held and released, waits wake on notify and time out, and a producer/consumer pair
// hands every item over exactly once. Run under ThreadSanitizer by scripts/tsan_tests.sh.
#include "core/thread_annotations.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <thread>

namespace shardflow {
namespace thread_annotations_test {

// True when no one holds `mu` (taken and given back at once).
bool IsFree(Mutex& mu) {
  if (!mu.TryLock()) return false;
  mu.Unlock();
  return true;
}

TEST(ThreadAnnotations, MutexLockHoldsForItsScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    std::thread other([&] { EXPECT_FALSE(IsFree(mu)); });
    other.join();
  }
  EXPECT_TRUE(IsFree(mu));
}

TEST(ThreadAnnotations, ReleasableMutexLockReleasesAndRetakes) {
  Mutex mu;
  {
    ReleasableMutexLock lock(mu);
    lock.Unlock();
    std::thread other([&] { EXPECT_TRUE(IsFree(mu)); });
    other.join();
    lock.Lock();
    std::thread again([&] { EXPECT_FALSE(IsFree(mu)); });
    again.join();
  }
  EXPECT_TRUE(IsFree(mu));  // the destructor released the re-taken lock
}

TEST(ThreadAnnotations, WaitForTimesOutWithoutANotify) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(mu);
  const auto start = std::chrono::steady_clock::now();
  bool notified = true;
  // Spurious wake-ups may return true early; a lone waiter must time out eventually.
  while (notified && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    notified = cv.WaitFor(mu, std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(notified);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

class Channel {
 public:
  void Put(int v) {
    MutexLock lock(mu_);
    items_.push_back(v);
    cv_.NotifyOne();
  }
  int Take() {
    MutexLock lock(mu_);
    while (items_.empty()) cv_.Wait(mu_);
    const int v = items_.front();
    items_.pop_front();
    return v;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<int> items_ GUARDED_BY(mu_);
};

TEST(ThreadAnnotations, CondVarHandsEveryItemOverInOrder) {
  Channel channel;
  constexpr int kItems = 20000;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) channel.Put(i);
  });
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(channel.Take(), i);
  producer.join();
}

}  // namespace thread_annotations_test
}  // namespace shardflow
