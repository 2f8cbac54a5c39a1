// Winograd F(2x2, 5x5) convolutions (core/cpu/winograd.hpp) against a direct convolution in
// double: forward (with and without bias) and the input gradient, on the CNN preset's shape,
// odd and tiny images (a last row or column of tiles half outside), batches of 1..5; bits
// independent of the intra-op threads; the shape rule and the kernel choice; and through the
// conv layer against the im2col + GEMM twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cpu/winograd.hpp"
#include "core/layers/conv2d.hpp"
#include "core/random.hpp"
#include "tests/core/conv_layer_pass.hpp"

namespace shardflow {
namespace winograd_test {

struct Shape5 {
  int64_t h, w, c, f, batch;
};

std::vector<float> Normals(int64_t n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(RandomNormal(9, stream, i));
  return v;
}

// fn(xi, yi, wi) for every product of a "same" 5 x 5 stride-1 convolution: input element xi
// (B, H, W, C) times kernel element wi (5, 5, C, F) adds to output element yi (B, H, W, F).
template <typename Fn>
void ForEachProduct(const Shape5& s, const Fn& fn) {
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t i = 0; i < s.h; ++i)
      for (int64_t j = 0; j < s.w; ++j)
        for (int64_t a = 0; a < 5; ++a)
          for (int64_t b = 0; b < 5; ++b) {
            const int64_t r = i + a - 2, q = j + b - 2;
            if (r < 0 || r >= s.h || q < 0 || q >= s.w) continue;
            for (int64_t c = 0; c < s.c; ++c)
              for (int64_t k = 0; k < s.f; ++k) {
                fn(((n * s.h + r) * s.w + q) * s.c + c, ((n * s.h + i) * s.w + j) * s.f + k,
                   ((a * 5 + b) * s.c + c) * s.f + k);
              }
          }
}

// The convolution and its two gradients, in double.
std::vector<double> DirectForward(const Shape5& s, const std::vector<float>& x,
                                  const std::vector<float>& w, const float* bias) {
  std::vector<double> y(static_cast<size_t>(s.batch * s.h * s.w * s.f), 0.0);
  for (size_t i = 0; i < y.size() && bias != nullptr; ++i) y[i] = bias[i % s.f];
  ForEachProduct(
      s, [&](int64_t xi, int64_t yi, int64_t wi) { y[yi] += double(x[xi]) * double(w[wi]); });
  return y;
}
std::vector<double> DirectBackwardData(const Shape5& s, const std::vector<float>& dy,
                                       const std::vector<float>& w) {
  std::vector<double> dx(static_cast<size_t>(s.batch * s.h * s.w * s.c), 0.0);
  ForEachProduct(
      s, [&](int64_t xi, int64_t yi, int64_t wi) { dx[xi] += double(dy[yi]) * double(w[wi]); });
  return dx;
}
std::vector<double> DirectBackwardFilter(const Shape5& s, const std::vector<float>& x,
                                         const std::vector<float>& dy) {
  std::vector<double> dw(static_cast<size_t>(25 * s.c * s.f), 0.0);
  ForEachProduct(
      s, [&](int64_t xi, int64_t yi, int64_t wi) { dw[wi] += double(x[xi]) * double(dy[yi]); });
  return dw;
}

// max |got - want| over max(1, max |want|).
double NormalisedError(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0.0, scale = 1.0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

// Unit-normal data and weights, sums of up to 25 * 64 products. F(2x2, 5x5)'s transforms scale
// by up to 5 before the products, so it rounds more than the direct sum: on these shapes the
// error was 4.4e-7 .. 4.1e-6 of the largest value forward, 1.3e-6 .. 3.3e-6 for the input
// gradient and 1.3e-7 .. 6.7e-6 for the kernel gradient (measured 2026-11-27); the bound
// leaves 3x.
constexpr double kTolerance = 2e-5;

std::vector<Shape5> Shapes() {
  return {{14, 14, 32, 64, 3}, {7, 5, 8, 16, 2},   {1, 1, 8, 8, 1},
          {2, 3, 16, 8, 5},    {28, 28, 8, 24, 1}, {3, 8, 24, 8, 2}};
}

std::string Name(const Shape5& s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c) + " -> " +
         std::to_string(s.f) + ", batch " + std::to_string(s.batch);
}

ConvGeometry Geometry(const Shape5& s) { return MakeConvGeometry(s.h, s.w, s.c, 5, 5, 1, true); }

TEST(Winograd, ForwardMatchesTheDirectSum) {
  for (const Shape5& s : Shapes()) {
    const auto x = Normals(s.batch * s.h * s.w * s.c, 1), w = Normals(25 * s.c * s.f, 2);
    const auto bias = Normals(s.f, 3);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      std::vector<float> y(static_cast<size_t>(s.batch * s.h * s.w * s.f), NAN);
      cpu::WinogradConvForward(Geometry(s), s.f, s.batch, x.data(), w.data(), b, y.data());
      EXPECT_LE(NormalisedError(y, DirectForward(s, x, w, b)), kTolerance)
          << Name(s) << (b != nullptr ? ", bias" : "");
    }
  }
}

TEST(Winograd, InputGradientMatchesTheDirectSum) {
  for (const Shape5& s : Shapes()) {
    const auto dy = Normals(s.batch * s.h * s.w * s.f, 4), w = Normals(25 * s.c * s.f, 5);
    std::vector<float> dx(static_cast<size_t>(s.batch * s.h * s.w * s.c), NAN);
    cpu::WinogradConvBackwardData(Geometry(s), s.f, s.batch, dy.data(), w.data(), dx.data());
    EXPECT_LE(NormalisedError(dx, DirectBackwardData(s, dy, w)), kTolerance) << Name(s);
  }
}

// Batches of 1 to 37 images: one piece, several, a last short one. The gradient is added to
// what dw holds.
TEST(Winograd, KernelGradientMatchesTheDirectSumAndIsAdded) {
  std::vector<Shape5> shapes = Shapes();
  shapes.push_back({6, 7, 8, 8, 37});
  for (const Shape5& s : shapes) {
    const auto x = Normals(s.batch * s.h * s.w * s.c, 8),
               dy = Normals(s.batch * s.h * s.w * s.f, 9);
    std::vector<float> dw(static_cast<size_t>(25 * s.c * s.f), 0.0f);
    cpu::WinogradConvBackwardFilter(Geometry(s), s.f, s.batch, x.data(), dy.data(), dw.data());
    const std::vector<double> want = DirectBackwardFilter(s, x, dy);
    EXPECT_LE(NormalisedError(dw, want), kTolerance) << Name(s);
    cpu::WinogradConvBackwardFilter(Geometry(s), s.f, s.batch, x.data(), dy.data(), dw.data());
    std::vector<double> twice(want);
    for (double& v : twice) v *= 2;
    EXPECT_LE(NormalisedError(dw, twice), kTolerance) << Name(s) << ", added a second time";
  }
}

TEST(Winograd, SameBitsForAnyThreadCount) {
  const int threads = cpu::IntraOpThreads();
  const Shape5 s{14, 14, 32, 64, 37};
  const auto x = Normals(s.batch * s.h * s.w * s.c, 6), w = Normals(25 * s.c * s.f, 7);
  std::vector<float> y1(static_cast<size_t>(s.batch * s.h * s.w * s.f)), y3(y1.size());
  std::vector<float> d1(x.size()), d3(x.size()), w1(w.size(), 0.0f), w3(w.size(), 0.0f);
  cpu::SetIntraOpThreads(1);
  cpu::WinogradConvForward(Geometry(s), s.f, s.batch, x.data(), w.data(), nullptr, y1.data());
  cpu::WinogradConvBackwardData(Geometry(s), s.f, s.batch, y1.data(), w.data(), d1.data());
  cpu::WinogradConvBackwardFilter(Geometry(s), s.f, s.batch, x.data(), y1.data(), w1.data());
  cpu::SetIntraOpThreads(3);
  cpu::WinogradConvForward(Geometry(s), s.f, s.batch, x.data(), w.data(), nullptr, y3.data());
  cpu::WinogradConvBackwardData(Geometry(s), s.f, s.batch, y1.data(), w.data(), d3.data());
  cpu::WinogradConvBackwardFilter(Geometry(s), s.f, s.batch, x.data(), y1.data(), w3.data());
  cpu::SetIntraOpThreads(threads);
  EXPECT_EQ(y1, y3);
  EXPECT_EQ(d1, d3);
  EXPECT_EQ(w1, w3);
}

TEST(Winograd, ShapeRuleAndKernelChoice) {
  EXPECT_TRUE(cpu::WinogradApplies(MakeConvGeometry(14, 14, 32, 5, 5, 1, true), 64));
  EXPECT_FALSE(cpu::WinogradApplies(MakeConvGeometry(28, 28, 1, 5, 5, 1, true), 32));
  EXPECT_FALSE(cpu::WinogradApplies(MakeConvGeometry(14, 14, 32, 5, 5, 1, true), 12));
  EXPECT_FALSE(cpu::WinogradApplies(MakeConvGeometry(14, 14, 32, 3, 3, 1, true), 64));
  EXPECT_FALSE(cpu::WinogradApplies(MakeConvGeometry(14, 14, 32, 5, 5, 2, true), 64));
  EXPECT_FALSE(cpu::WinogradApplies(MakeConvGeometry(14, 14, 32, 5, 5, 1, false), 64));
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  const ConvGeometry g = MakeConvGeometry(14, 14, 32, 5, 5, 1, true);
  cpu::SetConvKernel(cpu::ConvKernel::kAuto);
  EXPECT_TRUE(cpu::WinogradTakes(g, 64, 4));
  EXPECT_FALSE(cpu::WinogradTakes(g, 64, 3)) << "below kWinogradMinBatch";
  cpu::SetConvKernel(cpu::ConvKernel::kWinograd);
  EXPECT_TRUE(cpu::WinogradTakes(g, 64, 4));
  EXPECT_FALSE(cpu::LibraryConvTakes(g, 64, 64, cpu::ConvPass::kBackwardFilter));
  cpu::SetConvKernel(cpu::ConvKernel::kOwn);
  EXPECT_FALSE(cpu::WinogradTakes(g, 64, 64));
  cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
  EXPECT_FALSE(cpu::WinogradTakes(g, 64, 64));
  cpu::SetConvKernel(before);
}

// Through the conv layer and the CPU backend: SHARDFLOW_CONV=winograd against the GEMM twin,
// and below kWinogradMinBatch images the twin itself.
TEST(Winograd, ConvLayerMatchesTheGemmTwin) {
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  using Out = testing::ConvPass;
  const auto run = [](cpu::ConvKernel kernel, int64_t batch) {
    cpu::SetConvKernel(kernel);
    return testing::RunConvPass({{9, 6, 8}, {.filters = 16, .kernel_h = 5, .kernel_w = 5}}, batch);
  };
  const Out own = run(cpu::ConvKernel::kOwn, 5);
  const Out wino = run(cpu::ConvKernel::kWinograd, 5);
  // Under kWinogradMinBatch images the backend keeps the GEMM path: the twin's bits.
  const Out own3 = run(cpu::ConvKernel::kOwn, 3);
  const Out wino3 = run(cpu::ConvKernel::kWinograd, 3);
  cpu::SetConvKernel(before);
  EXPECT_EQ(own3.y, wino3.y);
  EXPECT_EQ(own3.dx, wino3.dx);
  EXPECT_EQ(own3.grads, wino3.grads);
  ASSERT_EQ(own.y.size(), wino.y.size());
  ASSERT_EQ(own.dx.size(), wino.dx.size());
  float scale = 1;
  for (float v : own.y) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < own.y.size(); ++i) ASSERT_NEAR(wino.y[i], own.y[i], 1e-5f * scale) << i;
  scale = 1;
  for (float v : own.dx) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < own.dx.size(); ++i) {
    ASSERT_NEAR(wino.dx[i], own.dx[i], 1e-5f * scale) << i;
  }
  scale = 1;
  for (float v : own.grads) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < own.grads.size(); ++i) {
    ASSERT_NEAR(wino.grads[i], own.grads[i], 1e-5f * scale) << i;
  }
  EXPECT_NE(own.y, wino.y) << "the same bits: Winograd did not run";
  EXPECT_NE(own.dx, wino.dx) << "the same bits: Winograd's input gradient did not run";
  EXPECT_NE(own.grads, wino.grads) << "the same bits: Winograd's kernel gradient did not run";
}

}  // namespace winograd_test
}  // namespace shardflow
