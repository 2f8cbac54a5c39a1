// oneDNN's sgemm behind cpu::Gemm (core/cpu/onednn_gemm.hpp): the automatic choice's rule, and
// the products it takes against a double-precision reference, in pieces of 256 columns with a
// partial last piece, alpha and beta; bits independent of the intra-op threads; a forced kernel
// (SHARDFLOW_GEMM=own or eigen) never reaches oneDNN.
#include "core/cpu/onednn_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace onednn_gemm_test {

bool Avx512Target() { return std::string(cpu::GemmTarget()).rfind("x86-64-v4", 0) == 0; }

TEST(OneDnnGemm, RuleTakesOnlyTheMeasuredShapes) {
  const bool on = cpu::OneDnnBuilt() && Avx512Target();
  EXPECT_EQ(cpu::LibrarySgemmTakes(false, false, 64, 1024, 3136), on);  // the CNN's dense forward
  EXPECT_EQ(cpu::LibrarySgemmTakes(false, false, 16, 512, 1024), on);
  EXPECT_EQ(cpu::LibrarySgemmTakes(false, false, 128, 512, 1024), on);
  EXPECT_FALSE(cpu::LibrarySgemmTakes(false, false, 15, 1024, 3136));   // batch-1 serving
  EXPECT_FALSE(cpu::LibrarySgemmTakes(false, false, 129, 1024, 3136));  // im2col rows
  EXPECT_FALSE(cpu::LibrarySgemmTakes(true, false, 64, 1024, 3136));    // weight gradient
  EXPECT_FALSE(cpu::LibrarySgemmTakes(false, true, 64, 1024, 3136));    // input gradient
  EXPECT_FALSE(cpu::LibrarySgemmTakes(false, false, 64, 511, 3136));
  EXPECT_FALSE(cpu::LibrarySgemmTakes(false, false, 64, 1024, 1023));
}

// C = 1.5 A B + 0.5 C for A (m x k, row stride k + 3), B (k x n, stride n + 5), C (m x n,
// stride n + 2) through cpu::Gemm on `threads` threads.
std::vector<float> Product(int64_t m, int64_t n, int64_t k, int threads, double* max_err) {
  const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
  std::vector<float> a(m * lda), b(k * ldb), c(m * ldc);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(RandomNormal(31, 0, i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(RandomNormal(32, 0, i));
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(RandomNormal(33, 0, i));
  const std::vector<float> c0 = c;
  const int before = cpu::IntraOpThreads();
  cpu::SetIntraOpThreads(threads);
  cpu::Gemm<float>(false, false, m, n, k, 1.5f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc);
  cpu::SetIntraOpThreads(before);
  *max_err = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, scale = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        ref += static_cast<double>(a[i * lda + kk]) * b[kk * ldb + j];
        scale += std::fabs(static_cast<double>(a[i * lda + kk]) * b[kk * ldb + j]);
      }
      ref = 1.5 * ref + 0.5 * c0[i * ldc + j];
      *max_err = std::max(*max_err, std::fabs(c[i * ldc + j] - ref) / (1.5 * scale + 1.0));
    }
    for (int64_t j = n; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]) << "padding";
  }
  return c;
}

TEST(OneDnnGemm, TakenProductsMatchTheReferenceWithBitsIndependentOfThreads) {
  const int64_t m = 19, n = 700, k = 1100;  // two whole pieces of 256 columns and one of 188
  std::vector<float> by_kernel[2];
  int i = 0;
  for (cpu::GemmKernel kernel : {cpu::GemmKernel::kAuto, cpu::GemmKernel::kOwn}) {
    const cpu::GemmKernel before = cpu::CurrentGemmKernel();
    cpu::SetGemmKernel(kernel);
    double err1 = 0, err2 = 0;
    const std::vector<float> one = Product(m, n, k, 1, &err1);
    const std::vector<float> two = Product(m, n, k, 2, &err2);
    cpu::SetGemmKernel(before);
    EXPECT_LT(err1, 1e-6) << cpu::GemmTarget();
    EXPECT_LT(err2, 1e-6);
    EXPECT_EQ(one, two) << "bits depend on the thread count";
    by_kernel[i++] = one;
  }
  // Where the rule takes the shape, auto ran oneDNN: another summation order than own's kernel.
  if (cpu::LibrarySgemmTakes(false, false, m, n, k)) {
    EXPECT_NE(by_kernel[0], by_kernel[1]);
  }
}

}  // namespace onednn_gemm_test
}  // namespace shardflow
