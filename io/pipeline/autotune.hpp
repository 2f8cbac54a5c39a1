// Autotuner: picks read parallelism, map parallelism and prefetch depth from measured stage
// rates, within a CPU budget (threads) and a RAM budget (bytes of buffered elements).
//
// Stages created with kAutotune hand their ParallelMapIterator to Manage(); a background
// thread samples each managed stage every `interval` and applies a hill-climbing rule:
//
//   starved   = consumer's wait on the stage's empty buffer / interval   (downstream idle)
//   util      = (worker busy + input wait) / (interval * active workers) (workers saturated)
//   parallelism knob: starved > 10% and util > 70% and threads in use < cpu_budget -> +1 worker
//                     starved < 1% and util < 40% and workers > 1                  -> -1 worker
//   buffer knob:      starved > 5% -> double the depth while (depth * mean element bytes)
//                     stays within ram_budget / number of buffer knobs
// A stage whose workers are idle waiting on their *input* (high input wait, low busy) gets no
// more threads: the bottleneck is upstream, and the rule above then raises the upstream stage.
// Every change is logged (SF_LOG Info) with the measurements behind it and kept in Decisions().
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"
#include "io/pipeline/iterator.hpp"

namespace shardflow::pipeline {

class ParallelMapIterator;

// Cores this process may use: sched_getaffinity's count (hardware_concurrency as fallback).
int DefaultCpuBudget();

class Autotuner {
 public:
  struct Options {
    int cpu_budget = 0;                           // worker threads in all; 0: DefaultCpuBudget()
    int64_t ram_budget_bytes = int64_t{1} << 30;  // buffered bytes in all tuned buffers
    double interval_s = 0.05;
    bool log = true;
  };
  enum class Knob { kParallelism, kBufferDepth };

  explicit Autotuner(const Options& options);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Takes ownership of a stage's iterator and tunes it until the returned iterator dies.
  std::unique_ptr<Iterator> Manage(std::unique_ptr<ParallelMapIterator> stage, Knob knob);
  // "map(decode): 1 -> 2 workers (starved 35%, util 96%)" ..., oldest first.
  std::vector<std::string> Decisions() const;
  // One tuning step now (tests and the background thread).
  void Step() EXCLUDES(mu_);

 private:
  struct Managed;
  class ManagedIterator;
  void Unregister(const Managed* managed) EXCLUDES(mu_);
  void Loop() EXCLUDES(mu_);

  Options options_;  // set at construction, then read-only
  // Taken before any managed stage's own lock (Step asks stages for their knobs under it).
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  // A Managed's fields are read and written only by Step, under mu_.
  std::vector<std::shared_ptr<Managed>> managed_ GUARDED_BY(mu_);
  std::vector<std::string> decisions_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shardflow::pipeline
