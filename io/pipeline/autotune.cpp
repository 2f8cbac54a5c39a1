#include "io/pipeline/autotune.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "core/logging.hpp"
#include "io/pipeline/parallel_map.hpp"

namespace shardflow::pipeline {

int DefaultCpuBudget() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

struct Autotuner::Managed {
  ParallelMapIterator* stage;
  Knob knob;
  int64_t last_ns = 0, last_busy = 0, last_input_wait = 0, last_output_wait = 0;
};

class Autotuner::ManagedIterator : public Iterator {
 public:
  ManagedIterator(Autotuner* tuner, std::unique_ptr<ParallelMapIterator> stage,
                  std::shared_ptr<Managed> managed)
      : tuner_(tuner), stage_(std::move(stage)), managed_(std::move(managed)) {}
  ~ManagedIterator() override { tuner_->Unregister(managed_.get()); }
  bool Next(Element* out) override { return stage_->Next(out); }
  void Save(StateWriter* w) override { stage_->Save(w); }
  void Restore(StateReader* r) override { stage_->Restore(r); }
  bool Peek(Element* out) override { return stage_->Peek(out); }

 private:
  Autotuner* tuner_;
  std::unique_ptr<ParallelMapIterator> stage_;
  std::shared_ptr<Managed> managed_;
};

Autotuner::Autotuner(const Options& options) : options_(options) {
  if (options_.cpu_budget <= 0) options_.cpu_budget = DefaultCpuBudget();
  thread_ = std::thread([this] { Loop(); });
}

Autotuner::~Autotuner() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

std::unique_ptr<Iterator> Autotuner::Manage(std::unique_ptr<ParallelMapIterator> stage, Knob knob) {
  auto managed = std::make_shared<Managed>();
  managed->stage = stage.get();
  managed->knob = knob;
  // Measure from now: a stage's counters may already hold time from before it was managed
  // (stats are shared by the iterators of one pipeline across epochs).
  const StageStats& stats = stage->stats();
  managed->last_busy = stats.busy_ns.load();
  managed->last_input_wait = stats.input_wait_ns.load();
  managed->last_output_wait = stats.output_wait_ns.load();
  managed->last_ns = NowNs();
  {
    MutexLock lock(mu_);
    managed_.push_back(managed);
  }
  return std::make_unique<ManagedIterator>(this, std::move(stage), managed);
}

void Autotuner::Unregister(const Managed* managed) {
  MutexLock lock(mu_);
  managed_.erase(std::remove_if(managed_.begin(), managed_.end(),
                                [&](const auto& m) { return m.get() == managed; }),
                 managed_.end());
}

std::vector<std::string> Autotuner::Decisions() const {
  MutexLock lock(mu_);
  return decisions_;
}

void Autotuner::Loop() {
  ReleasableMutexLock lock(mu_);
  while (!stop_) {
    cv_.WaitFor(mu_, std::chrono::duration<double>(options_.interval_s));
    if (stop_) break;
    lock.Unlock();
    Step();
    lock.Lock();
  }
}

void Autotuner::Step() {
  // Holding mu_ for the whole step keeps managed stages alive (Unregister waits for it).
  MutexLock lock(mu_);
  int threads_in_use = 0;
  int buffer_knobs = 0;
  for (const auto& m : managed_) {
    threads_in_use += m->stage->parallelism();
    if (m->knob == Knob::kBufferDepth) ++buffer_knobs;
  }
  const int64_t now = NowNs();
  for (const auto& m : managed_) {
    StageStats& s = m->stage->stats();
    // A wait in progress counts up to now (stage_stats.hpp); time measured when a call or wait
    // ends can still straddle intervals, so both fractions are capped at the whole interval.
    const int64_t since = s.output_wait_since_ns.load();
    const int64_t busy = s.busy_ns.load(), input_wait = s.input_wait_ns.load(),
                  output_wait = s.output_wait_ns.load() + (since > 0 ? now - since : 0);
    const double interval = static_cast<double>(now - m->last_ns);
    if (interval <= 0) continue;
    const int workers = m->stage->parallelism();
    const double starved = std::clamp((output_wait - m->last_output_wait) / interval, 0.0, 1.0);
    const double util = std::clamp(
        (busy - m->last_busy + input_wait - m->last_input_wait) / (interval * std::max(1, workers)),
        0.0, 1.0);
    m->last_ns = now;
    m->last_busy = busy;
    m->last_input_wait = input_wait;
    m->last_output_wait = output_wait;
    char why[160];
    std::snprintf(why, sizeof(why), "(starved %.0f%%, util %.0f%%)", 100 * starved, 100 * util);
    std::string decision;
    if (m->knob == Knob::kParallelism) {
      if (starved > 0.10 && util > 0.70 && threads_in_use < options_.cpu_budget &&
          workers < m->stage->max_workers()) {
        m->stage->SetParallelism(workers + 1);
        ++threads_in_use;
        decision = s.name + ": " + std::to_string(workers) + " -> " + std::to_string(workers + 1) +
                   " workers " + why + ", cpu budget " + std::to_string(options_.cpu_budget);
      } else if (starved < 0.01 && util < 0.40 && workers > 1) {
        m->stage->SetParallelism(workers - 1);
        --threads_in_use;
        decision = s.name + ": " + std::to_string(workers) + " -> " + std::to_string(workers - 1) +
                   " workers " + why + ", releasing a core";
      }
    } else {
      const int64_t depth = m->stage->capacity();
      const int64_t elements = std::max<int64_t>(1, s.elements.load());
      const int64_t mean_bytes = std::max<int64_t>(1, s.bytes.load() / elements);
      const int64_t share = options_.ram_budget_bytes / std::max(1, buffer_knobs);
      if (starved > 0.05 && 2 * depth * mean_bytes <= share) {
        m->stage->SetCapacity(2 * depth);
        decision = s.name + ": depth " + std::to_string(depth - 1) + " -> " +
                   std::to_string(2 * depth - 1) + " " + why + ", " +
                   std::to_string(2 * depth * mean_bytes) + " of " + std::to_string(share) +
                   " budget bytes";
      }
    }
    if (!decision.empty()) {
      if (options_.log) {
        // Every rank tunes its own pipeline; rank 0 speaks for them at info level, once per
        // knob (its first move; each epoch's pipeline starts from the same settings and makes
        // the same moves), the later moves at debug level.
        if (GetLogRank() <= 0 && FirstTimeInProcess("autotune " + s.name)) {
          SF_LOG(Info) << "autotune: " << decision << " (its later moves: log.level = debug)";
        } else {
          SF_LOG(Debug) << "autotune: " << decision;
        }
      }
      decisions_.push_back(decision);
    }
  }
}

}  // namespace shardflow::pipeline
