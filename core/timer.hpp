// Monotonic time: a stopwatch and a thread-safe duration accumulator.
//
//   Stopwatch watch;                    // starts running
//   ...; double s = watch.Seconds();    // elapsed since start / last Restart
//   double lap = watch.Lap();           // elapsed since the last Lap, and restarts the lap
//
//   DurationAccumulator wait_time;      // e.g. a pipeline stage's time blocked on its input
//   { ScopedDuration t(&wait_time); queue.Pop(); }
//   wait_time.Seconds(), wait_time.count()
//
// All times come from std::chrono::steady_clock (CLOCK_MONOTONIC on Linux): never goes back,
// unaffected by wall-clock changes. Stopwatch is not thread-safe (one owner);
// DurationAccumulator may be added to from any thread (relaxed atomics: totals are exact, but
// a reader racing with writers sees some prefix of the additions).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace shardflow {

// Nanoseconds on the monotonic clock since an arbitrary fixed point (boot on Linux).
inline int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Stopwatch {
 public:
  Stopwatch() { Restart(); }

  void Restart() { start_ = lap_ = MonotonicNanos(); }
  int64_t Nanos() const { return MonotonicNanos() - start_; }
  double Seconds() const { return static_cast<double>(Nanos()) * 1e-9; }
  double Millis() const { return static_cast<double>(Nanos()) * 1e-6; }
  // Seconds since the previous Lap() (or the start), and starts the next lap.
  double Lap() {
    const int64_t now = MonotonicNanos();
    const int64_t lap = now - lap_;
    lap_ = now;
    return static_cast<double>(lap) * 1e-9;
  }

 private:
  int64_t start_ = 0;
  int64_t lap_ = 0;
};

class DurationAccumulator {
 public:
  void AddNanos(int64_t nanos) {
    nanos_.fetch_add(nanos, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t nanos() const { return nanos_.load(std::memory_order_relaxed); }
  int64_t count() const { return count_.load(std::memory_order_relaxed); }
  double Seconds() const { return static_cast<double>(nanos()) * 1e-9; }
  void Reset() {
    nanos_.store(0, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> nanos_{0};
  std::atomic<int64_t> count_{0};
};

// Adds the lifetime of the scope to an accumulator.
class ScopedDuration {
 public:
  explicit ScopedDuration(DurationAccumulator* sink) : sink_(sink), start_(MonotonicNanos()) {}
  ~ScopedDuration() { sink_->AddNanos(MonotonicNanos() - start_); }
  ScopedDuration(const ScopedDuration&) = delete;
  ScopedDuration& operator=(const ScopedDuration&) = delete;

 private:
  DurationAccumulator* sink_;
  int64_t start_;
};

}  // namespace shardflow
