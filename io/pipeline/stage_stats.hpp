// StageStats: what every pipeline stage reports, and PipelineStats, the registry of them.
//
// Per stage: elements and bytes produced, busy time (doing its own work: reading, mapping,
// copying into batches, summed over worker threads), input-wait time (blocked pulling from its
// input), and for parallel stages the time its consumer waited on an empty output buffer plus
// the current and peak buffered elements/bytes. From these the autotuner derives per-stage
// rates, and a user sees where the pipeline stalls: a stage whose consumer waits a lot while
// its busy time is high is the bottleneck.
// Thread-safety: counters are atomics, updated from any thread; the registry is mutex-guarded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_annotations.hpp"

namespace shardflow::pipeline {

struct StageStats {
  explicit StageStats(std::string stage_name) : name(std::move(stage_name)) {}
  const std::string name;  // "map(decode)x4", "shuffle(10000)", ...
  std::atomic<int64_t> elements{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> busy_ns{0};
  std::atomic<int64_t> input_wait_ns{0};
  std::atomic<int64_t> output_wait_ns{0};  // consumer blocked on an empty buffer (parallel)
  // When the consumer's current wait began (0: not waiting); added to output_wait_ns when it
  // ends. The autotuner counts a wait in progress up to now, so a long wait spreads over the
  // intervals it spans instead of landing in the one it ends in.
  std::atomic<int64_t> output_wait_since_ns{0};
  std::atomic<int64_t> buffered_elements{0};
  std::atomic<int64_t> buffered_bytes{0};
  std::atomic<int64_t> peak_buffered_bytes{0};
  std::atomic<int> parallelism{1};  // worker threads (parallel stages)

  void AddBuffered(int64_t elements_delta, int64_t bytes_delta);
};

// A copy of one stage's counters at one moment.
struct StageSnapshot {
  std::string name;
  int64_t elements = 0, bytes = 0;
  double busy_s = 0, input_wait_s = 0, output_wait_s = 0;
  int64_t buffered_elements = 0, buffered_bytes = 0, peak_buffered_bytes = 0;
  int parallelism = 1;
};

class PipelineStats {
 public:
  // Registers a stage, or returns the existing one of that name (iterators of the same stage,
  // e.g. one reader per file or one per epoch, add up into one entry).
  std::shared_ptr<StageStats> Add(const std::string& name);
  // Stages in the order they were created (sources first).
  std::vector<StageSnapshot> Snapshot() const;
  // One line: "read: 1001 el 3.1 MB busy 0.12s wait 0.00s | map(decode)x2: ...".
  std::string Summary() const;

 private:
  mutable Mutex mu_;
  std::vector<std::shared_ptr<StageStats>> stages_ GUARDED_BY(mu_);
};

// Nanoseconds on a monotonic clock.
inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Adds the scope's duration to a counter.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::atomic<int64_t>* counter) : counter_(counter), start_(NowNs()) {}
  ~ScopedTimer() { counter_->fetch_add(NowNs() - start_, std::memory_order_relaxed); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::atomic<int64_t>* counter_;
  int64_t start_;
};

}  // namespace shardflow::pipeline
