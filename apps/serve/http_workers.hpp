// The HTTP worker threads of shardflow-serve: serve.http_threads threads that answer requests
// the connection poller (connection_poller.hpp) has read whole.
//
// A worker holds a request, never a connection: it runs the handler (a predict waits there for
// its batch), hands the response back and takes the next request. At most `max_waiting`
// requests wait for a free thread; TryRun() refuses one more at once (the poller then answers
// 503 + Retry-After), so a request is never left waiting without bound. Close() refuses new
// tasks; the threads still run every task already accepted, then end.
// Thread-safety: every member function may be called from any thread; Join() from one.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"

namespace shardflow::serve {

class WorkerPool {
 public:
  WorkerPool(int threads, int max_waiting);
  ~WorkerPool();  // Close() and Join()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task` unless every thread is busy and max_waiting tasks already wait, or the pool
  // is closed: then returns false and drops it.
  bool TryRun(std::function<void()> task) EXCLUDES(mu_);
  void Close() EXCLUDES(mu_);
  // Returns once every accepted task has run. REQUIRES: Close() called.
  void Join();

  int threads() const { return static_cast<int>(threads_.size()); }
  int max_waiting() const { return max_waiting_; }
  int in_flight() const EXCLUDES(mu_);  // running and waiting tasks

 private:
  void Loop() EXCLUDES(mu_);

  const int max_waiting_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> waiting_ GUARDED_BY(mu_);
  int running_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace shardflow::serve
