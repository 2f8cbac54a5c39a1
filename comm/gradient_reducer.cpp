#include "comm/gradient_reducer.hpp"

#include <chrono>
#include <string>

#include "comm/allreduce_shm.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"

namespace shardflow::comm {
namespace {
double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GradientReducer::GradientReducer(Communicator& comm, float* grads,
                                 std::vector<GradientSlice> slices, const ReducerOptions& options)
    : comm_(comm),
      grads_(grads),
      slices_(std::move(slices)),
      options_(options),
      marked_(slices_.size(), false) {
  if (options_.shared != nullptr &&
      (options_.shared->data() != grads || &options_.shared->comm() != &comm)) {
    throw Error(ErrorCode::kInternal,
                "gradient reducer: the shared buffer must hold the gradients and use the "
                "reducer's communicator");
  }
  thread_ = std::thread([this] { CommLoop(); });
}

GradientReducer::~GradientReducer() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  work_cv_.NotifyAll();
  thread_.join();
}

void GradientReducer::BucketReady(int index) {
  if (index < 0 || static_cast<size_t>(index) >= slices_.size() || marked_[index]) {
    throw Error(ErrorCode::kInternal, "gradient bucket " + std::to_string(index) +
                                          " marked ready twice or out of range (" +
                                          std::to_string(slices_.size()) + " buckets)");
  }
  marked_[index] = true;
  if (!options_.overlap) return;
  {
    MutexLock lock(mu_);
    queue_.push_back(index);
    ++outstanding_;
  }
  work_cv_.NotifyOne();
}

double GradientReducer::Finish() {
  const auto start = std::chrono::steady_clock::now();
  if (!options_.overlap) {
    // Nothing to overlap with: reduce on this thread, in index order (the communication thread
    // stays idle, so the communicator is still used by one thread at a time). No hand-off
    // between threads, which on a core shared by both costs two context switches per bucket.
    double seconds = 0;
    for (size_t i = 0; i < slices_.size(); ++i) {
      const auto bucket_start = std::chrono::steady_clock::now();
      ReduceBucket(static_cast<int>(i));
      seconds += SecondsSince(bucket_start);
    }
    MutexLock lock(mu_);
    reduce_seconds_ += seconds;
    stats_.reduce_seconds = reduce_seconds_;
  } else {
    MutexLock lock(mu_);
    // Buckets never reported go now, in index order, which is the same on every rank.
    for (size_t i = 0; i < slices_.size(); ++i) {
      if (!marked_[i]) {
        queue_.push_back(static_cast<int>(i));
        ++outstanding_;
      }
    }
    work_cv_.NotifyOne();
    while (outstanding_ != 0 && error_ == nullptr) done_cv_.Wait(mu_);
    if (error_) std::rethrow_exception(error_);
    stats_.reduce_seconds = reduce_seconds_;
  }
  std::fill(marked_.begin(), marked_.end(), false);
  const double blocked = SecondsSince(start);
  stats_.blocked_seconds += blocked;
  stats_.steps += 1;
  for (const auto& s : slices_) stats_.bytes += s.size * static_cast<int64_t>(sizeof(float));
  return blocked;
}

void GradientReducer::ReduceBucket(int index) {
  const GradientSlice& s = slices_[static_cast<size_t>(index)];
  const NamedTraceScope span("allreduce_bucket", index);  // "allreduce_bucket 0", ... per bucket
  if (options_.shared != nullptr) {
    AllreduceShared(*options_.shared, static_cast<size_t>(s.offset), static_cast<size_t>(s.size),
                    options_.allreduce.mode);
  } else {
    Allreduce(comm_, grads_ + s.offset, static_cast<size_t>(s.size), options_.allreduce);
  }
}

void GradientReducer::CommLoop() {
  SetTraceThreadName("gradient all-reduce");
  for (;;) {
    int index = -1;
    {
      MutexLock lock(mu_);
      while (!stop_ && queue_.empty()) work_cv_.Wait(mu_);
      if (queue_.empty()) return;  // stop_ and nothing left
      index = queue_.front();
      queue_.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      ReduceBucket(index);
    } catch (...) {
      MutexLock lock(mu_);
      error_ = std::current_exception();
      done_cv_.NotifyAll();
      return;
    }
    const double seconds = SecondsSince(start);
    {
      MutexLock lock(mu_);
      reduce_seconds_ += seconds;
      if (--outstanding_ == 0) done_cv_.NotifyAll();
    }
  }
}

}  // namespace shardflow::comm
