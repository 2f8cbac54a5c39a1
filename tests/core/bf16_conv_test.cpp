// oneDNN's bf16 convolutions (core/cpu/onednn_conv.hpp, ConvData::kBf16) against a reference in
// double on every pass: awkward shapes (1 channel, stride 2, valid padding, 3x2 and 1x1 kernels)
// and batches around the piece size; bits independent of the intra-op threads; the kernel
// gradient added, not written.
//
// The bounds are precision_test.cpp's for a product of length K, with S the sum of the
// magnitudes of the K products of one output: x, dy and the kernel are rounded to bf16 (8
// significant bits, u16 = 2^-8), the products of two bf16 numbers are exact in float, and oneDNN
// sums them in float (gamma_K = K u32 / (1 - K u32), u32 = 2^-24):
//   against the exact result of the rounded inputs: |got - exact_rounded| <= gamma_K S;
//   against the exact result of the float inputs:   |got - exact| <= (2 u16 + u16^2 + gamma_K) S.
// K: c kh kw (+1 for the bias) forward, f kh kw backward data, and batch oh ow plus one addition
// per piece of images for the kernel gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend/conv_geometry.hpp"
#include "core/cpu/bf16_round.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cpu/parallel.hpp"
#include "core/precision/bf16/cpu_bf16_gemm.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace bf16_conv_test {

constexpr double kU16 = 1.0 / 256;

double Gamma(int64_t k) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(k) * u / (1.0 - static_cast<double>(k) * u);
}

double R(float x) { return bf16::ToFloat(bf16::FromFloat(x)); }

std::vector<float> Values(int64_t n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(RandomNormal(23, stream, i));
  return v;
}

struct Shape {
  ConvGeometry g;
  int64_t f, batch;
  std::string Name() const {
    return std::to_string(g.h) + "x" + std::to_string(g.w) + "x" + std::to_string(g.c) + " " +
           std::to_string(g.kh) + "x" + std::to_string(g.kw) + "/" + std::to_string(g.stride) +
           " -> " + std::to_string(f) + ", batch " + std::to_string(batch);
  }
};

// Visits every product of the convolution: each (image, output pixel, kernel tap) whose input
// pixel lies inside the image, each input channel c and filter f, with the indexes of x, y and
// the kernel the product reads or feeds.
template <typename Fn>
void ForEachProduct(const Shape& s, Fn fn) {
  const ConvGeometry& g = s.g;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t iy = oy * g.stride + ky - g.pad_top, ix = ox * g.stride + kx - g.pad_left;
            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
            const int64_t xi = ((b * g.h + iy) * g.w + ix) * g.c,
                          yi = ((b * g.oh + oy) * g.ow + ox) * s.f,
                          wi = (ky * g.kw + kx) * g.c * s.f;
            for (int64_t c = 0; c < g.c; ++c)
              for (int64_t f = 0; f < s.f; ++f) fn(xi + c, yi + f, wi + c * s.f + f);
          }
}

// The exact results of the rounded inputs, of the float inputs, and the sums of magnitudes.
struct Reference {
  std::vector<double> rounded, exact, magnitude;
  explicit Reference(size_t n) : rounded(n), exact(n), magnitude(n) {}
  void Add(size_t at, float a, float b) {
    rounded[at] += R(a) * R(b);
    exact[at] += static_cast<double>(a) * b;
    magnitude[at] += std::fabs(static_cast<double>(a) * b);
  }
  // A float term added once, unrounded (the bias; what dw held).
  void AddFloat(size_t at, float v) {
    rounded[at] += v;
    exact[at] += v;
    magnitude[at] += std::fabs(v);
  }
  void Check(const std::vector<float>& got, int64_t k, const std::string& what) const {
    for (size_t i = 0; i < got.size(); ++i) {
      const double slack = std::ldexp(1.0, -60);  // outputs with no products at all
      ASSERT_LE(std::fabs(got[i] - rounded[i]), Gamma(k) * magnitude[i] * 1.01 + slack)
          << what << " at " << i;
      ASSERT_LE(std::fabs(got[i] - exact[i]),
                (2 * kU16 + kU16 * kU16 + Gamma(k)) * magnitude[i] + slack)
          << what << " at " << i;
    }
  }
};

std::vector<Shape> Shapes() {
  std::vector<Shape> out;
  for (int64_t batch : {1, 17, 37}) {
    out.push_back({MakeConvGeometry(12, 12, 1, 5, 5, 1, true), 8, batch});
    out.push_back({MakeConvGeometry(9, 9, 6, 3, 3, 2, true), 5, batch});
    out.push_back({MakeConvGeometry(11, 11, 4, 3, 2, 1, false), 6, batch});
    out.push_back({MakeConvGeometry(8, 8, 16, 1, 1, 2, true), 12, batch});
  }
  return out;
}

class Bf16Conv : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = cpu::CurrentConvKernel();  // first: TearDown restores it after a skip too
    if (!cpu::OneDnnBuilt()) GTEST_SKIP() << "built without oneDNN (SHARDFLOW_ONEDNN=OFF)";
    if (const std::string why = bf16::CpuUnsupported(); !why.empty()) {
      GTEST_SKIP() << "bf16 products cannot run here: " << why;
    }
    // The suite also runs with SHARDFLOW_CONV=own (the Eigen variants), which declines.
    cpu::SetConvKernel(cpu::ConvKernel::kAuto);
  }
  void TearDown() override { cpu::SetConvKernel(before_); }
  cpu::ConvKernel before_ = cpu::ConvKernel::kAuto;
};

TEST_F(Bf16Conv, ForwardWithinTheBounds) {
  for (const Shape& s : Shapes()) {
    const ConvGeometry& g = s.g;
    const auto x = Values(s.batch * g.h * g.w * g.c, 1), w = Values(g.kh * g.kw * g.c * s.f, 2),
               bias = Values(s.f, 3);
    std::vector<float> y(static_cast<size_t>(s.batch * g.oh * g.ow * s.f), -9.0f);
    ASSERT_TRUE(cpu::LibraryConvForward(g, s.f, s.batch, x.data(), w.data(), bias.data(), y.data(),
                                        cpu::ConvData::kBf16))
        << s.Name();
    Reference ref(y.size());
    ForEachProduct(s, [&](int64_t xi, int64_t yi, int64_t wi) { ref.Add(yi, x[xi], w[wi]); });
    for (size_t i = 0; i < y.size(); ++i) ref.AddFloat(i, bias[i % s.f]);
    ref.Check(y, g.c * g.kh * g.kw + 1, "forward " + s.Name());
  }
}

TEST_F(Bf16Conv, InputGradientWithinTheBounds) {
  for (const Shape& s : Shapes()) {
    const ConvGeometry& g = s.g;
    const auto dy = Values(s.batch * g.oh * g.ow * s.f, 4), w = Values(g.kh * g.kw * g.c * s.f, 5);
    std::vector<float> dx(static_cast<size_t>(s.batch * g.h * g.w * g.c), -9.0f);
    ASSERT_TRUE(cpu::LibraryConvBackwardData(g, s.f, s.batch, dy.data(), w.data(), dx.data(),
                                             cpu::ConvData::kBf16))
        << s.Name();
    Reference ref(dx.size());
    ForEachProduct(s, [&](int64_t xi, int64_t yi, int64_t wi) { ref.Add(xi, dy[yi], w[wi]); });
    ref.Check(dx, s.f * g.kh * g.kw, "input gradient " + s.Name());
  }
}

TEST_F(Bf16Conv, KernelGradientWithinTheBoundsAndAdded) {
  for (const Shape& s : Shapes()) {
    const ConvGeometry& g = s.g;
    const auto x = Values(s.batch * g.h * g.w * g.c, 6),
               dy = Values(s.batch * g.oh * g.ow * s.f, 7);
    const std::vector<float> start = Values(g.kh * g.kw * g.c * s.f, 8);
    std::vector<float> dw = start;
    ASSERT_TRUE(cpu::LibraryConvBackwardFilter(g, s.f, s.batch, x.data(), dy.data(), dw.data(),
                                               cpu::ConvData::kBf16))
        << s.Name();
    Reference ref(dw.size());
    ForEachProduct(s, [&](int64_t xi, int64_t yi, int64_t wi) { ref.Add(wi, x[xi], dy[yi]); });
    for (size_t i = 0; i < dw.size(); ++i) ref.AddFloat(i, start[i]);  // dw +=
    const int64_t pieces = (s.batch + cpu::kImagesPerPiece - 1) / cpu::kImagesPerPiece;
    ref.Check(dw, s.batch * g.oh * g.ow + pieces + 1, "kernel gradient " + s.Name());
  }
}

TEST_F(Bf16Conv, SameBitsForAnyThreadCount) {
  const Shape s{MakeConvGeometry(14, 14, 16, 3, 3, 1, true), 32, 37};
  const ConvGeometry& g = s.g;
  const auto x = Values(s.batch * g.h * g.w * g.c, 9), w = Values(g.kh * g.kw * g.c * s.f, 10);
  const auto dy = Values(s.batch * g.oh * g.ow * s.f, 11);
  auto run = [&](int threads) {
    const int before = cpu::IntraOpThreads();
    cpu::SetIntraOpThreads(threads);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size(), 0.0f);
    cpu::LibraryConvForward(g, s.f, s.batch, x.data(), w.data(), nullptr, y.data(),
                            cpu::ConvData::kBf16);
    cpu::LibraryConvBackwardData(g, s.f, s.batch, dy.data(), w.data(), dx.data(),
                                 cpu::ConvData::kBf16);
    cpu::LibraryConvBackwardFilter(g, s.f, s.batch, x.data(), dy.data(), dw.data(),
                                   cpu::ConvData::kBf16);
    cpu::SetIntraOpThreads(before);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dw.begin(), dw.end());
    return y;
  };
  EXPECT_EQ(run(1), run(3));
}

TEST_F(Bf16Conv, OwnKernelsDeclineAndTouchNothing) {
  // SHARDFLOW_CONV=own (or winograd): the bf16 precision then runs im2col + the bf16 GEMM.
  const ConvGeometry g = MakeConvGeometry(9, 9, 6, 3, 3, 2, true);
  std::string impl;
  cpu::SetConvKernel(cpu::ConvKernel::kAuto);
  EXPECT_TRUE(
      cpu::LibraryConvTakes(g, 5, 17, cpu::ConvPass::kForward, &impl, cpu::ConvData::kBf16));
  EXPECT_NE(impl.find("bf16"), std::string::npos) << impl;
  for (auto kernel : {cpu::ConvKernel::kOwn, cpu::ConvKernel::kWinograd}) {
    cpu::SetConvKernel(kernel);
    std::vector<float> x(17 * 9 * 9 * 6, 1.0f), w(3 * 3 * 6 * 5, 1.0f), y(17 * 5 * 5 * 5, -7.0f);
    EXPECT_FALSE(cpu::LibraryConvForward(g, 5, 17, x.data(), w.data(), nullptr, y.data(),
                                         cpu::ConvData::kBf16));
    EXPECT_EQ(y[0], -7.0f);
  }
}

}  // namespace bf16_conv_test
}  // namespace shardflow
