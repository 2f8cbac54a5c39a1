#include "core/cpu/parallel.hpp"

#include <strings.h>
#include <xmmintrin.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"

namespace shardflow::cpu {
namespace {

struct Job {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t pieces = 0;
  std::atomic<int64_t> next{0}, done{0};
};

void Claim(Job& job) {
  for (;;) {
    const int64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.pieces) return;
    (*job.fn)(i);
    job.done.fetch_add(1, std::memory_order_release);
  }
}

// OMP_WAIT_POLICY=PASSIVE (what the tests and the serve benchmark set for side-by-side
// processes) makes the workers sleep at once, as it did the OpenMP team.
int SpinIterations() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr && strcasecmp(policy, "passive") == 0 ? 0 : 4096;
}

class Pool {
 public:
  ~Pool() { Resize(0); }

  void Resize(int workers) EXCLUDES(run_mu_, mu_) {
    MutexLock run(run_mu_);
    {
      MutexLock l(mu_);
      stop_ = true;
    }
    wake_.NotifyAll();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    {
      MutexLock l(mu_);
      stop_ = false;
    }
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }

  void Run(int64_t pieces, const std::function<void(int64_t)>& fn) EXCLUDES(mu_) {
    if (pieces <= 0) return;
    if (pieces == 1 || !run_mu_.TryLock()) {
      for (int64_t i = 0; i < pieces; ++i) fn(i);
      return;
    }
    if (threads_.empty()) {
      run_mu_.Unlock();
      for (int64_t i = 0; i < pieces; ++i) fn(i);
      return;
    }
    Job job;
    job.fn = &fn;
    job.pieces = pieces;
    {
      MutexLock l(mu_);
      job_ = &job;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    wake_.NotifyAll();
    Claim(job);
    // Only pieces a worker claimed are left; they are running, so spin briefly, then yield.
    for (int spin = 0; job.done.load(std::memory_order_acquire) < pieces; ++spin) {
      if (spin < 4096) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
    }
    {
      MutexLock l(mu_);
      job_ = nullptr;  // a worker waking from now on finds no job
      while (inside_ > 0) idle_.Wait(mu_);
    }
    run_mu_.Unlock();
  }

 private:
  void Work() EXCLUDES(mu_) {
    FlushDenormalsOnThisThread();
    uint64_t seen = 0;
    for (;;) {
      // Spin a little first (~0.1 ms): the next kernel call of a step usually follows soon, and
      // a sleeping worker takes a futex wake-up to join it.
      for (int spin = 0; spin < spin_ && published_.load(std::memory_order_acquire) == seen;
           ++spin) {
        _mm_pause();
      }
      Job* job = nullptr;
      {
        MutexLock l(mu_);
        while (!stop_ && generation_ == seen) wake_.Wait(mu_);
        if (stop_) return;
        seen = generation_;
        job = job_;
        if (job == nullptr) continue;
        ++inside_;
      }
      Claim(*job);
      MutexLock l(mu_);
      if (--inside_ == 0) idle_.NotifyAll();
    }
  }

  Mutex run_mu_;  // held by the one Run using the workers, and by Resize
  Mutex mu_;
  CondVar wake_, idle_;
  const int spin_ = SpinIterations();
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the lock
  Job* job_ GUARDED_BY(mu_) = nullptr;
  int inside_ GUARDED_BY(mu_) = 0;  // workers inside Claim for the current job
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // changed only under run_mu_
};

Pool& ThePool() {
  static Pool pool;
  return pool;
}

}  // namespace

void RunPieces(int64_t pieces, const std::function<void(int64_t)>& fn) {
  ThePool().Run(pieces, fn);
}

void SetPoolWorkers(int workers) { ThePool().Resize(std::max(workers, 0)); }

}  // namespace shardflow::cpu
