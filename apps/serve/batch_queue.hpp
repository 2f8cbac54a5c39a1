// Dynamic micro-batching: the bounded queue between the HTTP threads and the model replicas.
//
// An HTTP thread Push()es a Job (one request's instances) and waits on its future. A replica
// thread calls PopBatch(), which blocks for the first job, then waits until the jobs queued
// hold max_batch_size instances or the oldest has waited batch_timeout_us, whichever comes
// first, and takes jobs in arrival order while they fit in max_batch_size (a job larger than
// that runs alone). The queue holds at most `capacity` instances: Push() refuses (kFull) a job
// that would exceed it, except into an empty queue, so the queue never grows without bound and
// a caller answers 503 (the HTTP server refuses a request larger than `capacity` outright).
// Flush() ends the waiting for fuller batches. Close() refuses further jobs; PopBatch() still
// hands out every queued job, then returns false: closing drains, nothing queued is dropped.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "apps/serve/signature.hpp"
#include "core/tensor.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::serve {

using Clock = std::chrono::steady_clock;

// What a job is answered with.
struct JobResult {
  std::string error;  // empty on success (else an internal error: HTTP 500)
  BatchResults results;
  int64_t version = 0;     // the model version that computed it
  int64_t batch_rows = 0;  // instances in the batch it ran in
};

// One request's instances. Owned jointly by the waiting HTTP thread and the queue.
struct Job {
  Tensor rows;  // the input feature, [n, ...]
  Clock::time_point enqueued = Clock::now();
  std::promise<JobResult> done;

  int64_t num_rows() const { return rows.dim(0); }
};

struct BatchOptions {
  int64_t max_batch_size = 32;
  int64_t batch_timeout_us = 1000;
  int64_t capacity = 1024;  // instances
};

class BatchQueue {
 public:
  enum class PushResult { kQueued, kFull, kClosed };

  explicit BatchQueue(BatchOptions options) : options_(options) {}

  PushResult Push(std::shared_ptr<Job> job) EXCLUDES(mu_);
  // Blocks until a batch is ready; false when the queue is closed and empty.
  bool PopBatch(std::vector<std::shared_ptr<Job>>* batch) EXCLUDES(mu_);
  void Close() EXCLUDES(mu_);
  // Queued and later jobs go without waiting for batch_timeout_us (a draining server).
  void Flush() EXCLUDES(mu_);
  int64_t depth() const EXCLUDES(mu_);  // instances queued

  const BatchOptions& options() const { return options_; }

 private:
  // Whether the queued jobs make a batch now (full, timed out or closing).
  bool ReadyLocked(Clock::time_point now) const REQUIRES(mu_);

  const BatchOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::shared_ptr<Job>> jobs_ GUARDED_BY(mu_);
  int64_t queued_rows_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  bool flushing_ GUARDED_BY(mu_) = false;
};

}  // namespace shardflow::serve
