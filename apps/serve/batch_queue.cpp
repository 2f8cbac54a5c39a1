#include "apps/serve/batch_queue.hpp"

namespace shardflow::serve {

BatchQueue::PushResult BatchQueue::Push(std::shared_ptr<Job> job) {
  const int64_t rows = job->num_rows();
  {
    MutexLock lock(mu_);
    if (closed_) return PushResult::kClosed;
    if (!jobs_.empty() && queued_rows_ + rows > options_.capacity) return PushResult::kFull;
    jobs_.push_back(std::move(job));
    queued_rows_ += rows;
  }
  // All: a replica waiting out the timeout of a partial batch and idle ones alike re-check.
  cv_.NotifyAll();
  return PushResult::kQueued;
}

bool BatchQueue::ReadyLocked(Clock::time_point now) const {
  if (closed_ || flushing_ || queued_rows_ >= options_.max_batch_size) return true;
  const auto deadline =
      jobs_.front()->enqueued + std::chrono::microseconds(options_.batch_timeout_us);
  return now >= deadline;
}

bool BatchQueue::PopBatch(std::vector<std::shared_ptr<Job>>* batch) {
  batch->clear();
  MutexLock lock(mu_);
  for (;;) {
    while (jobs_.empty() && !closed_) cv_.Wait(mu_);
    if (jobs_.empty()) return false;  // closed and drained
    const Clock::time_point now = Clock::now();
    if (ReadyLocked(now)) break;
    const auto deadline =
        jobs_.front()->enqueued + std::chrono::microseconds(options_.batch_timeout_us);
    cv_.WaitFor(mu_, deadline - now);
  }
  int64_t rows = 0;
  while (!jobs_.empty()) {
    const int64_t n = jobs_.front()->num_rows();
    if (!batch->empty() && rows + n > options_.max_batch_size) break;
    rows += n;
    queued_rows_ -= n;
    batch->push_back(std::move(jobs_.front()));
    jobs_.pop_front();
  }
  // Another replica may find the rest ready already.
  if (!jobs_.empty()) cv_.NotifyAll();
  return true;
}

void BatchQueue::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  cv_.NotifyAll();
}

void BatchQueue::Flush() {
  {
    MutexLock lock(mu_);
    flushing_ = true;
  }
  cv_.NotifyAll();
}

int64_t BatchQueue::depth() const {
  MutexLock lock(mu_);
  return queued_rows_;
}

}  // namespace shardflow::serve
