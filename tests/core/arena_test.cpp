// Flat arenas: reverse-layer layout, buckets, and bucket-ready notifications from backprop.
#include "core/arena.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "core/loss.hpp"
#include "core/model.hpp"

namespace shardflow {
namespace arena_test {

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

// ZeroGrads marks; every accessor but GradForOverwrite writes the zeros before handing memory
// out; GradForOverwrite says "overwrite" once per ZeroGrads and leaves the memory alone.
TEST(Arena, ZeroGradsIsLazyAndEveryAccessorSeesZeros) {
  Arena<float> a;
  const int p0 = a.Declare(0, "a", "w", {3}, true);
  const int p1 = a.Declare(1, "b", "w", {2}, true);
  const int p2 = a.Declare(2, "c", "w", {4}, true);
  const int p3 = a.Declare(3, "d", "w", {2}, true);
  a.Allocate();
  const auto fill = [&](float v) {
    float* g = a.grads();
    std::fill(g, g + a.size(), v);
  };
  const auto all = [](const float* g, int64_t n, float v) {
    return std::all_of(g, g + n, [v](float x) { return x == v; });
  };
  fill(7.0f);
  a.ZeroGrads();
  EXPECT_TRUE(all(a.grad(p0), 3, 0.0f));
  EXPECT_TRUE(all(a.grad_data(a.spec(p3)), 2, 0.0f));
  const Arena<float>::GradWrite w = a.GradForOverwrite(p1);
  EXPECT_TRUE(w.overwrite);
  EXPECT_EQ(w.data, a.grads() + a.spec(p1).offset);
  EXPECT_TRUE(all(w.data, 2, 7.0f)) << "the overwriting caller's gradient was written";
  EXPECT_FALSE(a.GradForOverwrite(p1).overwrite) << "a second writer must add";
  EXPECT_TRUE(all(a.grads() + a.spec(p2).offset, 4, 0.0f));  // p2: only the whole arena asked
  EXPECT_FALSE(a.GradForOverwrite(p2).overwrite);
  // A gradient written since ZeroGrads is not zeroed again; the next ZeroGrads marks it again.
  a.grad(p0)[1] = 5.0f;
  EXPECT_EQ(a.grad(p0)[1], 5.0f);
  fill(3.0f);
  a.ZeroGrads();
  EXPECT_TRUE(all(a.GradView(p2).data<float>(), 4, 0.0f));
  EXPECT_TRUE(all(static_cast<const Arena<float>&>(a).grads(), a.size(), 0.0f));
  EXPECT_FALSE(a.GradForOverwrite(p1).overwrite);
}

// A dense layer writes its weight gradient over the marked one (GEMM beta = 0, never reading
// the old values: NaN here) and gets what it gets adding to written zeros; a second backward
// pass (another micro-batch) adds. 40 and 32 features: the weight gradients' GEMMs have 40
// and 32 rows, so they run shardflow's own kernels (16 rows or more), not Eigen's.
TEST(Arena, DenseWeightGradientOverwritesAMarkedGradient) {
  const std::string spec = "flatten, dense:32, relu, dense:3";
  Sequential<float> lazy(spec, {40}, {.seed = 3}), eager(spec, {40}, {.seed = 3});
  Tensor x(DType::kFloat32, {5, 40});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = 0.25f * float(i % 7) - 0.6f;
  Tensor y(DType::kInt32, {5});
  for (int64_t i = 0; i < 5; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
  for (Sequential<float>* m : {&lazy, &eager}) {
    float* g = m->arena().grads();
    std::fill(g, g + m->arena().size(), std::numeric_limits<float>::quiet_NaN());
    m->arena().ZeroGrads();
  }
  eager.arena().grads();  // zeros written: the layers add to them
  for (int pass = 0; pass < 2; ++pass) {
    for (Sequential<float>* m : {&lazy, &eager}) {
      Tensor d;
      SoftmaxCrossEntropy<float>(m->Forward(x, true), y, &d);
      m->Backward(d);
    }
    const float* gl = lazy.arena().grads();
    const float* ge = eager.arena().grads();
    for (int64_t i = 0; i < lazy.arena().size(); ++i) {
      ASSERT_EQ(gl[i], ge[i]) << "pass " << pass << ", gradient element " << i;
    }
    EXPECT_NE(gl[0], 0.0f);
  }
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

}  // namespace arena_test
}  // namespace shardflow
