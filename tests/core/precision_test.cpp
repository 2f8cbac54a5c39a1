// Precisions (core/precision/precision.hpp) and bf16's products on the CPU
// (core/precision/bf16/cpu_bf16_gemm.hpp): rounding, the bounds of a bf16 product, results
// independent of the thread count, the registry's choices and refusals, and whole models.
//
// The bounds. bf16 keeps 8 significant bits: rounding to nearest moves a value by at most
// u16 = 2^-8 of itself. A product a b of rounded inputs is within (2 u16 + u16^2) |a b| of the
// exact one, and oneDNN sums the K products in float (u32 = 2^-24 per addition, at most K
// additions in any order: gamma_K = K u32 / (1 - K u32) of the sum of magnitudes). So, with
// S = sum_k |a_ik| |b_kj|:
//   against the exact product of the rounded inputs: |c - c_rounded| <= gamma_K S;
//   against the exact product of the float inputs:   |c - c_exact| <= (2 u16 + u16^2 + gamma_K) S.
#include "core/precision/precision.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/backend/device_runtime.hpp"
#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/gemm.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "core/precision/bf16/cpu_bf16_gemm.hpp"
#include "core/precision/peak_rate.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace precision_test {

constexpr double kU16 = 1.0 / 256;  // 2^-8: bf16 keeps 8 significant bits

// Skips a test that needs bf16 products on a CPU (or build) that has none, saying why.
#define SKIP_WITHOUT_BF16()                                             \
  do {                                                                  \
    if (const std::string why = bf16::CpuUnsupported(); !why.empty()) { \
      GTEST_SKIP() << "bf16 products cannot run here: " << why;         \
    }                                                                   \
  } while (0)

double Gamma(int64_t k) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(k) * u / (1.0 - static_cast<double>(k) * u);
}

TEST(Bf16Round, NearestTiesToEvenAndSpecialValues) {
  EXPECT_EQ(bf16::FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(bf16::FromFloat(-0.0f), 0x8000);
  EXPECT_EQ(bf16::FromFloat(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: to the even 1.0
  EXPECT_EQ(bf16::FromFloat(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: up to even
  EXPECT_EQ(bf16::FromFloat(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(bf16::FromFloat(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16::FromFloat(FLT_MAX), 0x7f80);  // rounds past the largest bf16: infinity
  EXPECT_TRUE(std::isnan(bf16::ToFloat(bf16::FromFloat(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not round into an infinity.
  EXPECT_TRUE(std::isnan(bf16::ToFloat(bf16::FromFloat(std::bit_cast<float>(0x7f800001u)))));
  for (uint64_t i = 0; i < 1000; ++i) {
    const float x = static_cast<float>(RandomNormal(7, 0, i) * 100.0);
    EXPECT_LE(std::fabs(bf16::ToFloat(bf16::FromFloat(x)) - x), kU16 * std::fabs(x)) << x;
  }
}

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

std::vector<float> Values(int64_t n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(RandomNormal(11, stream, i));
  return v;
}

// Checks one product against both bounds of the file's comment.
void CheckBounds(const GemmCase& g) {
  const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
  const std::vector<float> a = Values(g.m * g.k, 1), b = Values(g.k * g.n, 2);
  std::vector<float> c = Values(g.m * g.n, 3);
  const std::vector<float> c0 = c;
  bf16::CpuGemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(),
                g.n);
  auto at = [&](int64_t i, int64_t p) { return g.ta ? a[p * lda + i] : a[i * lda + p]; };
  auto bt = [&](int64_t p, int64_t j) { return g.tb ? b[j * ldb + p] : b[p * ldb + j]; };
  auto r = [](float x) { return static_cast<double>(bf16::ToFloat(bf16::FromFloat(x))); };
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double exact = 0, rounded = 0, s = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        exact += static_cast<double>(at(i, p)) * bt(p, j);
        rounded += r(at(i, p)) * r(bt(p, j));
        s += std::fabs(static_cast<double>(at(i, p)) * bt(p, j));
      }
      const double keep = g.beta * static_cast<double>(c0[i * g.n + j]);
      // alpha and beta's own roundings (one float multiply and add each): 3 u32 of the result.
      const double slack = 3 * std::ldexp(1.0, -24) * (std::fabs(g.alpha) * s + std::fabs(keep));
      const double got = c[i * g.n + j];
      EXPECT_LE(std::fabs(got - (g.alpha * rounded + keep)),
                std::fabs(g.alpha) * Gamma(g.k) * s * 1.01 + slack)
          << i << "," << j << " of " << g.m << "x" << g.n << "x" << g.k;
      EXPECT_LE(std::fabs(got - (g.alpha * exact + keep)),
                std::fabs(g.alpha) * (2 * kU16 + kU16 * kU16 + Gamma(g.k)) * s + slack)
          << i << "," << j;
    }
  }
}

TEST(Bf16Gemm, WithinTheBoundsOfBf16InputsOnAwkwardShapes) {
  SKIP_WITHOUT_BF16();
  for (const GemmCase& g : std::vector<GemmCase>{{false, false, 1, 1, 1, 1.0f, 0.0f},
                                                 {false, false, 7, 300, 33, 1.0f, 0.0f},
                                                 {true, false, 17, 257, 64, 1.0f, 1.0f},
                                                 {false, true, 33, 10, 515, 0.5f, 0.0f},
                                                 {true, true, 5, 513, 9, 1.0f, 0.25f},
                                                 {false, false, 64, 256, 1024, 1.0f, 0.0f}}) {
    CheckBounds(g);
  }
}

TEST(Bf16Gemm, NoProductsScalesOrOverwritesC) {
  SKIP_WITHOUT_BF16();
  std::vector<float> c{std::numeric_limits<float>::quiet_NaN(), 2.0f, 3.0f, 4.0f};
  bf16::CpuGemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));  // beta 0 overwrites, NaN included
  c = {1, 2, 3, 4};
  bf16::CpuGemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
}

TEST(Bf16Gemm, SameBitsForAnyThreadCount) {
  SKIP_WITHOUT_BF16();
  const int64_t m = 48, n = 700, k = 300;  // three pieces of columns
  const std::vector<float> a = Values(m * k, 4), b = Values(k * n, 5);
  std::vector<float> one(m * n), two(m * n);
  const int before = cpu::IntraOpThreads();
  cpu::SetIntraOpThreads(1);
  bf16::CpuGemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, one.data(), n);
  cpu::SetIntraOpThreads(2);
  bf16::CpuGemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, two.data(), n);
  cpu::SetIntraOpThreads(before);
  EXPECT_EQ(one, two);
}

TEST(Precision, NamesChoicesAndRefusals) {
  EXPECT_EQ(PrecisionNames(), (std::vector<std::string>{"fp32", "bf16"}));
  EXPECT_EQ(ChoosePrecision("fp32", Device::kCpu, "train.precision").name, "fp32");
  try {
    ChoosePrecision("fp16", Device::kCpu, "train.precision");
    ADD_FAILURE() << "fp16 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.precision = fp16 is not a precision (choices: "
                                         "fp32, bf16, auto)"),
              std::string::npos)
        << e.what();
  }
  const std::string why = bf16::CpuUnsupported();
  if (why.empty()) {
    const ChosenPrecision bf = ChoosePrecision("bf16", Device::kCpu, "train.precision");
    EXPECT_NE(bf.kernels.find("bf16"), std::string::npos) << bf.kernels;
  } else {
    try {
      ChoosePrecision("bf16", Device::kCpu, "train.precision");
      ADD_FAILURE() << "bf16 was accepted where " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("train.precision = bf16 cannot run on cpu: " + why),
                std::string::npos)
          << e.what();
    }
  }
  // auto: bf16 only on the matrix units; otherwise fp32, saying why.
  const ChosenPrecision a = ChoosePrecision("auto", Device::kCpu, "train.precision");
  if (why.empty() && bf16::CpuHasMatrixUnits()) {
    EXPECT_EQ(a.name, "bf16");
  } else {
    EXPECT_EQ(a.name, "fp32");
    EXPECT_NE(a.note.find("train.precision = auto runs fp32 (bf16: "), std::string::npos) << a.note;
  }
}

TEST(Precision, ScopeInstallsTheWrappedBackendAndPutsTheOwnBack) {
  SKIP_WITHOUT_BF16();
  Backend<float>* own = &cpu::CpuBackend<float>();
  ASSERT_EQ(&BackendFor<float>(Device::kCpu), own);
  {
    PrecisionScope scope(Device::kCpu, "bf16");
    EXPECT_EQ(InstalledPrecision(Device::kCpu), "bf16");
    EXPECT_NE(&BackendFor<float>(Device::kCpu), own);
    EXPECT_EQ(&BackendFor<double>(Device::kCpu), &cpu::CpuBackend<double>());
    PrecisionScope again(Device::kCpu, "bf16");  // over itself: still one wrapper deep
    float a = 1.0f + std::ldexp(1.0f, -12), b = 1.0f, c = 0;
    BackendFor<float>(Device::kCpu).Gemm(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
    EXPECT_EQ(c, 1.0f);  // a rounded to bf16 once
  }
  EXPECT_EQ(InstalledPrecision(Device::kCpu), "fp32");
  EXPECT_EQ(&BackendFor<float>(Device::kCpu), own);
}

// A model's forward pass in bf16 against fp32: every layer's products carry the bound above,
// so logits of a small network (inputs and weights of order 1) stay within a few percent of
// their spread; and one training step lowers the loss alike.
void CompareModel(const std::string& spec, const Shape& sample) {
  const int64_t batch = 16;
  Shape shape{batch};
  shape.insert(shape.end(), sample.begin(), sample.end());
  Tensor x(DType::kFloat32, shape);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>(RandomUniform(3, 0, i));
  }
  Sequential<float> m32(spec, sample, {.seed = 5});
  const Tensor y32 = m32.Forward(x, false).Clone();
  PrecisionScope scope(Device::kCpu, "bf16");
  Sequential<float> m16(spec, sample, {.seed = 5});
  const Tensor& y16 = m16.Forward(x, false);
  double spread = 0, worst = 0;
  for (int64_t i = 0; i < y32.num_elements(); ++i) {
    spread = std::max(spread, std::fabs(static_cast<double>(y32.data<float>()[i])));
    worst = std::max(worst,
                     std::fabs(static_cast<double>(y16.data<float>()[i]) - y32.data<float>()[i]));
  }
  EXPECT_GT(worst, 0.0) << spec << ": bf16 changed nothing: were its products float?";
  EXPECT_LE(worst, 0.05 * spread) << spec;
}

TEST(Precision, ModelsInBf16TrackFp32) {
  SKIP_WITHOUT_BF16();
  CompareModel("flatten, dense:32, relu, dense:10", {6, 6, 1});
  CompareModel("conv:4:3x3:same, batchnorm, relu, maxpool:2:2, flatten, dense:10", {8, 8, 2});
  CompareModel("conv:4:3x3:same, residual:4, gap, dense:10", {8, 8, 2});
  CompareModel("lstm:8, dense:3", {5, 2});
}

TEST(PeakRate, MeasuresTheCpusInstalledGemmOnly) {
  const double rate = MeasurePeakGemmRate(Device::kCpu, 1);
  EXPECT_GT(rate, 0.1);  // 2 GFLOP in under 20 s: any CPU that runs this suite
  EXPECT_LT(rate, 1e5);  // and not a timer that read zero
  EXPECT_EQ(MeasurePeakGemmRate(Device::kCuda, 1), 0.0);
}

}  // namespace precision_test
}  // namespace shardflow
