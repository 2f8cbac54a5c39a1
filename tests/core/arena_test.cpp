// Flat arenas: reverse-layer layout, buckets, and bucket-ready notifications from backprop.
#include "core/arena.hpp"

#include <gtest/gtest.h>

#include "core/loss.hpp"
#include "core/model.hpp"

namespace shardflow {
namespace {

TEST(Arena, LaysOutParametersInReverseLayerOrder) {
  Arena<float> a;
  const int w0 = a.Declare(0, "00_dense", "kernel", {3, 4}, true);
  const int b0 = a.Declare(0, "00_dense", "bias", {4}, false);
  const int w2 = a.Declare(2, "02_dense", "kernel", {4, 2}, true);
  const int b2 = a.Declare(2, "02_dense", "bias", {2}, false);
  a.Allocate();
  EXPECT_EQ(a.size(), 12 + 4 + 8 + 2);
  EXPECT_EQ(a.spec(w2).offset, 0);
  EXPECT_EQ(a.spec(b2).offset, 8);
  EXPECT_EQ(a.spec(w0).offset, 10);
  EXPECT_EQ(a.spec(b0).offset, 22);
  EXPECT_EQ(a.param(b0), a.params() + 22);
  EXPECT_EQ(a.ParamView(w0).shape(), (Shape{3, 4}));
  EXPECT_EQ(a.spec(w0).FullName(), "00_dense/kernel");
  EXPECT_THROW(a.Declare(3, "x", "y", {1}, true), Error);
}

TEST(Arena, BucketsAreContiguousWholeParametersOfAtLeastTheCap) {
  Arena<float> a;
  for (int layer = 0; layer < 5; ++layer) {
    a.Declare(layer, "l" + std::to_string(layer), "kernel", {10 * (layer + 1)}, true);
    a.Declare(layer, "l" + std::to_string(layer), "bias", {1}, false);
  }
  a.Allocate();
  for (size_t cap : {size_t{0}, size_t{4}, size_t{100}, size_t{200}, size_t{1} << 30}) {
    SCOPED_TRACE(cap);
    const auto buckets = a.Buckets(cap);
    int64_t next = 0;
    int params = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      EXPECT_EQ(buckets[i].offset, next);  // contiguous, in arena order
      next += buckets[i].size;
      params += static_cast<int>(buckets[i].params.size());
      if (i + 1 < buckets.size()) {
        EXPECT_GE(buckets[i].size * 4, static_cast<int64_t>(cap));
      }
      EXPECT_GE(buckets[i].highest_layer, buckets[i].lowest_layer);
    }
    EXPECT_EQ(next, a.size());
    EXPECT_EQ(params, 10);
    if (cap == 0) {
      EXPECT_EQ(buckets.size(), 10u);
    }
    if (cap == (size_t{1} << 30)) {
      EXPECT_EQ(buckets.size(), 1u);
    }
  }
  // The first bucket holds the last layer.
  EXPECT_EQ(a.Buckets(4).front().highest_layer, 4);
}

TEST(Arena, EmptyArenaHasNoBuckets) {
  Arena<float> a;
  a.Allocate();
  EXPECT_EQ(a.size(), 0);
  EXPECT_TRUE(a.Buckets(1024).empty());
  a.ZeroGrads();
}

TEST(Arena, BucketsBecomeReadyInBackpropOrderDuringBackward) {
  Sequential<float> m("flatten, dense:6, relu, dense:5, relu, dense:3", {4});
  std::vector<int> fired;
  std::vector<int> layers_done;
  GradReadyTracker tracker(
      m.arena().Buckets(1), [&](const GradBucket& b) { fired.push_back(b.index); },
      m.arena().specs());
  m.SetGradsReadyHook([&](int layer) {
    layers_done.push_back(layer);
    tracker.LayerDone(layer);
  });
  for (int step = 0; step < 2; ++step) {
    fired.clear();
    layers_done.clear();
    tracker.Reset();
    Tensor x(DType::kFloat32, {2, 4});
    Tensor y(DType::kInt32, {2});
    Tensor d;
    m.arena().ZeroGrads();
    SoftmaxCrossEntropy<float>(m.Forward(x, true), y, &d);
    EXPECT_EQ(tracker.pending_buckets(), 6);
    m.Backward(d);
    EXPECT_EQ(layers_done, (std::vector<int>{5, 3, 1}));
    EXPECT_EQ(fired, (std::vector<int>{0, 1, 2, 3, 4, 5}));  // front of the arena first
    EXPECT_EQ(tracker.pending_buckets(), 0);
  }
}

TEST(Arena, TrackerWaitsForEveryLayerOfABucket) {
  Arena<float> a;
  a.Declare(0, "a", "w", {2}, true);
  a.Declare(1, "b", "w", {2}, true);
  a.Declare(2, "c", "w", {2}, true);
  a.Allocate();
  int fired = 0;
  GradReadyTracker t(
      a.Buckets(1 << 20), [&](const GradBucket&) { ++fired; }, a.specs());
  t.LayerDone(0);  // out of order on purpose
  t.LayerDone(2);
  EXPECT_EQ(fired, 0);
  t.LayerDone(1);
  EXPECT_EQ(fired, 1);
  t.LayerDone(1);  // a repeat does not fire again
  EXPECT_EQ(fired, 1);
}

}  // namespace
}  // namespace shardflow
