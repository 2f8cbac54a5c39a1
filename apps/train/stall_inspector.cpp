#include "apps/train/stall_inspector.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "comm/watchdog.hpp"
#include "core/logging.hpp"

namespace shardflow::train {
namespace {

constexpr size_t kWindow = 64;  // steps the median is taken over
constexpr int64_t kRecomputeEvery = 16;

}  // namespace

std::string DescribeInputStall(const std::vector<pipeline::StageSnapshot>& stages,
                               std::string* starved) {
  std::string line;
  char part[256];
  for (const pipeline::StageSnapshot& s : stages) {
    std::snprintf(
        part, sizeof(part), "%s%s: queue %lld (peak %.0f KiB), busy %.2f s, waited %.2f s",
        line.empty() ? "" : " | ", s.name.c_str(), static_cast<long long>(s.buffered_elements),
        static_cast<double>(s.peak_buffered_bytes) / 1024.0, s.busy_s, s.input_wait_s);
    line += part;
  }
  starved->clear();
  for (const pipeline::StageSnapshot& s : stages) {
    // The last stage's queue holds a batch: the consumer could have it at once.
    if (s.name.rfind("prefetch", 0) == 0 && s.buffered_elements > 0) {
      starved->clear();
      return line;
    }
    if (s.peak_buffered_bytes == 0) continue;  // no output queue: runs in its consumer's thread
    if (s.buffered_elements == 0) *starved += (starved->empty() ? "" : ", ") + s.name;
  }
  return line;
}

StallInspector::StallInspector(const pipeline::PipelineStats* input, const StallOptions& options,
                               int rank)
    : input_(input), options_(options), rank_(rank) {
  if (options_.factor > 0) thread_ = std::thread([this] { Run(); });
}

StallInspector::~StallInspector() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  thread_.join();
  comm::Watchdog::SetStallSeconds(0);
}

void StallInspector::InputBegin(int64_t step) {
  input_step_.store(step, std::memory_order_relaxed);
  input_since_ns_.store(pipeline::NowNs(), std::memory_order_relaxed);
}

void StallInspector::InputEnd() { input_since_ns_.store(0, std::memory_order_relaxed); }

// Every kRecomputeEvery steps: the median of the last kWindow steps sets both thresholds.
void StallInspector::StepEnd(double seconds) {
  if (options_.factor <= 0) return;
  if (recent_.size() < kWindow) {
    recent_.push_back(seconds);
  } else {
    recent_[static_cast<size_t>(steps_) % kWindow] = seconds;
  }
  if (++steps_ % kRecomputeEvery != 0) return;
  std::vector<double> sorted = recent_;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2),
                   sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double threshold = std::max(options_.min_seconds, options_.factor * median);
  median_ns_.store(static_cast<int64_t>(median * 1e9), std::memory_order_relaxed);
  threshold_ns_.store(static_cast<int64_t>(threshold * 1e9), std::memory_order_relaxed);
  comm::Watchdog::SetStallSeconds(threshold);
}

void StallInspector::Run() {
  int64_t reported_step = -1;
  MutexLock lock(mu_);
  while (!stop_) {
    const int64_t threshold = threshold_ns_.load(std::memory_order_relaxed);
    const double poll = threshold > 0 ? std::clamp(threshold * 0.25e-9, 0.01, 0.25) : 0.25;
    wake_.WaitFor(mu_, std::chrono::duration<double>(poll));
    if (!stop_) Check(&reported_step);
  }
}

void StallInspector::Check(int64_t* reported_step) {
  const int64_t threshold = threshold_ns_.load(std::memory_order_relaxed);
  const int64_t since = input_since_ns_.load(std::memory_order_relaxed);
  const int64_t step = input_step_.load(std::memory_order_relaxed);
  if (threshold == 0 || since == 0 || step == *reported_step) return;
  const int64_t waited = pipeline::NowNs() - since;
  if (waited <= threshold) return;
  *reported_step = step;
  const double median = static_cast<double>(median_ns_.load(std::memory_order_relaxed)) * 1e-9;
  if (input_ == nullptr) {  // dynamic sharding: a pipeline per pass, claimed batch by batch
    SF_LOG(Warn) << "stall inspector: rank " << rank_ << ", step " << step << " has waited "
                 << static_cast<double>(waited) * 1e-9 << " s for its batch ("
                 << static_cast<double>(waited) * 1e-9 / std::max(median, 1e-9)
                 << "x the median step of " << median
                 << " s); its input claims batches as it goes (dist.sharding = dynamic): a "
                    "claim waits for worker 0's counter, a read for the data files";
    return;
  }
  std::string starved;
  const std::string stages = DescribeInputStall(input_->Snapshot(), &starved);
  SF_LOG(Warn) << "stall inspector: rank " << rank_ << ", step " << step << " has waited "
               << static_cast<double>(waited) * 1e-9 << " s for its batch ("
               << static_cast<double>(waited) * 1e-9 / std::max(median, 1e-9)
               << "x the median step of " << median << " s); "
               << (starved.empty()
                       ? std::string("the input queues are not empty (prefetch holds a batch): "
                                     "the pipeline keeps up, the wait is in the consumer")
                       : "empty input queues: " + starved +
                             " (the slow stage feeds the one nearest the source)")
               << "; input stages: " << stages;
}

}  // namespace shardflow::train
