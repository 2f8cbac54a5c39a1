// GradientReducer: averages a model's gradients over ranks, bucket by bucket, overlapped with
// backpropagation.
//
// The gradient arena is one flat float array; a bucket is a contiguous slice of it (core/arena.hpp
// lays buckets out so they become final in backprop order). During Backward the training thread
// calls BucketReady(i) as each bucket's gradients become final; a dedicated communication thread
// all-reduces it at once, while backprop computes the next buckets. Finish() blocks until every
// bucket of the step is reduced and returns how long it blocked: the communication time that was
// NOT hidden behind backprop.
//
//   GradientReducer reducer(comm, grads, slices, {.overlap = true});  // grads: the arena's
//   GradReadyTracker tracker(buckets,
//                            [&](const GradBucket& b) { reducer.BucketReady(b.index); },
//                            arena.specs());
//   model.SetGradsReadyHook([&](int layer) { tracker.LayerDone(layer); });
//   model.Backward(dy);  // buckets start reducing as they complete
//   reducer.Finish();    // all averaged; now optimizer.Step()
//
// Every rank must mark the same buckets ready in the same order (same model, same backprop);
// buckets a step never marked are reduced by Finish in index order. With overlap = false the
// buckets are reduced only when Finish is called, on the calling thread (for measuring the
// gain of overlap, and for machines without a spare core for the communication thread).
// Thread-safety: BucketReady and Finish are called from one training thread. The reducer owns
// `comm` exclusively while it exists (no other thread may use that Communicator).
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <thread>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::comm {

struct GradientSlice {
  int64_t offset = 0;  // elements from the start of the gradient array
  int64_t size = 0;    // elements
};

class SharedFloatBuffer;

struct ReducerOptions {
  AllreduceOptions allreduce{.mode = ReduceMode::kAverage};
  bool overlap = true;  // reduce buckets during backprop (false: all at Finish)
  // When set, the gradient array is shared->data() and every bucket is reduced in place
  // through shared memory (AllreduceShared, allreduce.mode applies; algorithm and wire do not).
  SharedFloatBuffer* shared = nullptr;
};

struct ReducerStats {
  int64_t steps = 0;
  double reduce_seconds = 0;   // time the comm thread spent in all-reduces
  double blocked_seconds = 0;  // time Finish() waited (communication not hidden)
  int64_t bytes = 0;           // gradient bytes reduced
};

class GradientReducer {
 public:
  // REQUIRES: grads outlives the reducer; slices lie inside the gradient array and do not overlap.
  GradientReducer(Communicator& comm, float* grads, std::vector<GradientSlice> slices,
                  const ReducerOptions& options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Bucket `index` is final for this step. Throws Error(kInternal) for an unknown or repeated
  // index.
  void BucketReady(int index);
  // Waits until every bucket of this step is reduced; returns the seconds it blocked. Rethrows
  // an error raised on the communication thread.
  double Finish();

  const ReducerStats& stats() const { return stats_; }
  size_t num_buckets() const { return slices_.size(); }

 private:
  void CommLoop() EXCLUDES(mu_);
  void ReduceBucket(int index) EXCLUDES(mu_);

  Communicator& comm_;
  float* grads_;
  std::vector<GradientSlice> slices_;
  ReducerOptions options_;
  ReducerStats stats_;        // training thread only
  std::vector<bool> marked_;  // this step; training thread only

  Mutex mu_;
  CondVar work_cv_;                          // comm thread waits for buckets
  CondVar done_cv_;                          // Finish waits for completion
  std::deque<int> queue_ GUARDED_BY(mu_);    // buckets ready, in order
  int64_t outstanding_ GUARDED_BY(mu_) = 0;  // queued or in flight
  double reduce_seconds_ GUARDED_BY(mu_) = 0;
  std::exception_ptr error_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shardflow::comm
