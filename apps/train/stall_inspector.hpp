// The stall inspector: when a step takes `factor` times the median step (and at least
// `min_seconds`), says where it is stuck, well before the watchdog's hard limit
// (dist.watchdog_seconds) ends the job.
//   Input: a thread of this class watches the training loop's wait for its next batch; a wait
//     past the threshold logs, once per step, the input pipeline's stages with their queue
//     depths, and the stages whose output queue is empty (the starved ones: the slow stage is
//     the one feeding the empty queue nearest the source). A prefetch queue holding a batch:
//     the pipeline keeps up and the wait is elsewhere (the consumer's own thread).
//   Collectives: the threshold is handed to every watchdog of the process
//     (comm::Watchdog::SetStallSeconds), which logs the collective and the ranks that had not
//     joined it.
// The median is over the last 64 steps, recomputed every 16; nothing is reported before the
// first 16 steps. Cost on the training thread: two relaxed atomic stores per step and one
// store of the step time.
// Thread-safety: InputBegin/InputEnd/StepEnd from the training thread; the inspector's own
// thread only reads atomics and the pipeline's (thread-safe) stats.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"
#include "io/pipeline/stage_stats.hpp"

namespace shardflow::train {

struct StallOptions {
  double factor = 10;      // log.stall_factor: a step this many times the median; 0: off
  double min_seconds = 1;  // log.stall_min_seconds: and at least this long
};

// The input pipeline's stages as one line with queue depths, and the stages with an output queue
// that is empty, comma-separated ("" when none is, or the prefetch queue holds a batch).
std::string DescribeInputStall(const std::vector<pipeline::StageSnapshot>& stages,
                               std::string* starved);

class StallInspector {
 public:
  // `input` must outlive the inspector (null: no per-stage detail, as under dynamic sharding,
  // whose pipeline is rebuilt at every fence). Starts the thread (none when factor <= 0).
  StallInspector(const pipeline::PipelineStats* input, const StallOptions& options, int rank);
  ~StallInspector();
  StallInspector(const StallInspector&) = delete;
  StallInspector& operator=(const StallInspector&) = delete;

  void InputBegin(int64_t step);
  void InputEnd();
  void StepEnd(double seconds);

 private:
  void Run() EXCLUDES(mu_);
  void Check(int64_t* reported_step);

  const pipeline::PipelineStats* input_;
  const StallOptions options_;
  const int rank_;
  std::atomic<int64_t> input_since_ns_{0};  // 0: not waiting for a batch
  std::atomic<int64_t> input_step_{-1};
  std::atomic<int64_t> threshold_ns_{0};  // 0: not known yet
  std::atomic<int64_t> median_ns_{0};
  std::vector<double> recent_;  // the last steps' seconds (training thread only)
  int64_t steps_ = 0;           // training thread only
  Mutex mu_;
  CondVar wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shardflow::train
