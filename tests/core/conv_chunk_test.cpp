// The convolution's bounded im2col chunks and the intra-op threads of the CPU conv and pooling
// kernels against their one-chunk, one-thread twins: forward output, input gradient and
// parameter gradients, at batch sizes around the chunk size (1, chunk - 1, chunk, chunk + 1,
// several chunks with a remainder).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/arena.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/kernels.hpp"
#include "core/layers/conv2d.hpp"
#include "core/layers/pooling.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace conv_chunk_test {

struct Pass {
  std::vector<double> y, dx, grads;
};

// One forward and backward pass of `layer` (built on `in`) over `batch` seeded samples, with
// seeded parameters and output gradient.
Pass RunPass(std::unique_ptr<Layer<double>> layer, const Shape& in, int64_t batch) {
  Arena<double> arena;
  BuildContext<double> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_test"};
  const Shape out = layer->Build(in, ctx);
  arena.Allocate();
  for (int64_t i = 0; i < arena.size(); ++i) arena.params()[i] = RandomNormal(3, 0, i);
  arena.ZeroGrads();
  Tensor x(DType::kFloat64, WithBatch(batch, in));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<double>()[i] = RandomNormal(4, 0, i);
  const Tensor y = layer->Forward(x, {.training = true});
  Tensor dy(DType::kFloat64, WithBatch(batch, out));
  for (int64_t i = 0; i < dy.num_elements(); ++i) dy.data<double>()[i] = RandomNormal(5, 0, i);
  const Tensor dx = layer->Backward(dy, true);
  Pass p;
  p.y.assign(y.data<double>(), y.data<double>() + y.num_elements());
  p.dx.assign(dx.data<double>(), dx.data<double>() + dx.num_elements());
  p.grads.assign(arena.grads(), arena.grads() + arena.size());
  return p;
}

void ExpectNear(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-11) << what << " at " << i;
}

std::unique_ptr<Layer<double>> Conv(int64_t budget, int64_t stride = 1) {
  return MakeConv2D<double>({.filters = 4,
                             .kernel_h = 3,
                             .kernel_w = 3,
                             .stride = stride,
                             .same_padding = true,
                             .im2col_budget = budget});
}

TEST(ConvChunk, ChunkedEqualsOneChunkAtAwkwardBatchSizes) {
  const Shape in{6, 5, 3};
  for (const int64_t stride : {1, 2}) {
    const int64_t oh = (6 + stride - 1) / stride, ow = (5 + stride - 1) / stride;
    const int64_t per_sample = oh * ow * 3 * 3 * 3;  // rows x KH*KW*C
    const int64_t chunk = 3;
    for (const int64_t batch : {int64_t{1}, chunk - 1, chunk, chunk + 1, 3 * chunk + 2}) {
      SCOPED_TRACE("stride " + std::to_string(stride) + " batch " + std::to_string(batch));
      // A budget just under chunk + 1 samples' rows gives chunks of exactly `chunk` samples.
      const Pass chunked = RunPass(Conv(per_sample * (chunk + 1) - 1, stride), in, batch);
      const Pass whole = RunPass(Conv(per_sample * 1000, stride), in, batch);
      ExpectNear(chunked.y, whole.y, "y");
      ExpectNear(chunked.dx, whole.dx, "dx");
      ExpectNear(chunked.grads, whole.grads, "kernel and bias gradients");
    }
  }
  // A budget smaller than one sample still makes progress, one sample per chunk.
  ExpectNear(RunPass(Conv(1), in, 4).grads, RunPass(Conv(0), in, 4).grads, "budget 1");
}

// Two intra-op threads give bitwise the results of one (im2col rows, col2im images and pooling
// images are split over threads; each output is computed by one thread in the same order).
TEST(ConvChunk, ThreadsDoNotChangeResults) {
  const int before = cpu::IntraOpThreads();
  const Shape in{9, 8, 4};
  auto both = [&](auto make) {
    cpu::SetIntraOpThreads(1);
    const Pass one = RunPass(make(), in, 7);
    cpu::SetIntraOpThreads(2);
    const Pass two = RunPass(make(), in, 7);
    cpu::SetIntraOpThreads(before);
    EXPECT_EQ(std::memcmp(one.y.data(), two.y.data(), one.y.size() * sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(one.dx.data(), two.dx.data(), one.dx.size() * sizeof(double)), 0);
    EXPECT_EQ(one.grads, two.grads);
  };
  both([] { return Conv(0); });
  both([] { return MakePool2D<double>({.size = 2, .max = true}); });
  both([] { return MakePool2D<double>({.size = 3, .stride = 2, .max = false}); });
}

// Max pooling's backward pass gives a window's gradient to its first maximum only, also when
// the maximum is tied (the branch-free channel loop of cpu::Pool2DGrad).
TEST(ConvChunk, MaxPoolTiesGiveTheFirstMaximumTheGradient) {
  const PoolGeometry g{.h = 2, .w = 2, .c = 3, .k = 2, .stride = 2, .oh = 1, .ow = 1};
  // Channel 0: all four tied; channel 1: tie between elements 1 and 3; channel 2: unique max 2.
  const std::vector<float> x{5, 0, 1, 5, 7, 1, 5, 0, 9, 5, 7, 1};
  const std::vector<float> y{5, 7, 9}, dy{1, 2, 3};
  std::vector<float> dx(12, -1.0f);
  cpu::Pool2DGrad(g, true, false, 1, x.data(), y.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}));
}

}  // namespace conv_chunk_test
}  // namespace shardflow
