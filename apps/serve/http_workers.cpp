#include "apps/serve/http_workers.hpp"

#include <exception>

#include "core/logging.hpp"

namespace shardflow::serve {

WorkerPool::WorkerPool(int threads, int max_waiting) : max_waiting_(max_waiting) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  Close();
  Join();
}

bool WorkerPool::TryRun(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    if (closed_) return false;
    const size_t capacity = threads_.size() + static_cast<size_t>(max_waiting_);
    if (static_cast<size_t>(running_) + waiting_.size() >= capacity) return false;
    waiting_.push_back(std::move(task));
  }
  cv_.NotifyOne();
  return true;
}

void WorkerPool::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  cv_.NotifyAll();
}

void WorkerPool::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

int WorkerPool::in_flight() const {
  MutexLock lock(mu_);
  return running_ + static_cast<int>(waiting_.size());
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      while (waiting_.empty() && !closed_) cv_.Wait(mu_);
      if (waiting_.empty()) return;  // closed and drained
      task = std::move(waiting_.front());
      waiting_.pop_front();
      ++running_;
    }
    try {
      task();
    } catch (const std::exception& e) {  // the poller's tasks catch their own; a last guard
      SF_LOG(Error) << "http worker: " << e.what();
    }
    MutexLock lock(mu_);
    --running_;
  }
}

}  // namespace shardflow::serve
