// A fake tensor-parallel group for tests: T threads, one per way, whose sum callbacks meet at a
// barrier and add every way's buffer in way order (so every way gets the same bits), and a
// runner that starts the T threads and rethrows the first failure.
// Thread-safety: Sum is called by exactly one thread per way, collectively.
#pragma once

#include <barrier>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/layers/tensor_parallel.hpp"

namespace shardflow::testing_tp {

class FakeTensorGroup {
 public:
  explicit FakeTensorGroup(int ways) : ways_(ways), bufs_(ways), barrier_(ways) {}

  // The options of way `way`: sums over this group.
  TensorParallel Way(int way) {
    TensorParallel tp{.way = way, .ways = ways_};
    tp.sum_float = [this, way](float* x, int64_t n) { Sum(way, x, n); };
    tp.sum_double = [this, way](double* x, int64_t n) { Sum(way, x, n); };
    return tp;
  }
  int sums() const { return sums_; }  // completed all-reduces (counted by way 0)

 private:
  template <typename T>
  void Sum(int way, T* x, int64_t n) {
    bufs_[way] = x;
    barrier_.arrive_and_wait();
    std::vector<T> total(static_cast<size_t>(n), T(0));
    for (int w = 0; w < ways_; ++w) {
      const T* p = static_cast<const T*>(bufs_[w]);
      for (int64_t i = 0; i < n; ++i) total[i] += p[i];
    }
    barrier_.arrive_and_wait();  // every way has read every buffer
    for (int64_t i = 0; i < n; ++i) x[i] = total[i];
    if (way == 0) ++sums_;
    barrier_.arrive_and_wait();
  }

  int ways_;
  std::vector<void*> bufs_;
  std::barrier<> barrier_;
  int sums_ = 0;
};

// Runs fn(way) on `ways` threads; rethrows the first exception. A way that throws before a sum
// the others wait in would hang them, so fn must fail (ASSERT/throw) only outside the sums or on
// every way alike.
inline void RunWays(int ways, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  std::exception_ptr error;
  std::mutex mu;
  for (int w = 0; w < ways; ++w) {
    threads.emplace_back([&, w]() {
      try {
        fn(w);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace shardflow::testing_tp
