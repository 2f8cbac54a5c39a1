// shardflow's own float GEMM kernel (core/cpu/sgemm_kernel.hpp) forced on every shape
// (cpu::SetGemmKernel(kOwn)), against a double-precision triple loop: every tile size and
// remainder (rows 1..25, columns around the 8- and 16-float vectors and the 24- and 64-column
// panels, depths around the 256-deep K steps), every transpose, padded leading dimensions,
// alpha and beta; and the bit-for-bit claims the kernel makes: one result whatever the thread
// count or the partition, the transposed-B product computed transposed equal to the packed one,
// and beta = 0 never reading C. Runs on the CPU's best target (AVX-512 where it has it) and,
// in CTest core.unit_tests.x86_64_v3, on the AVX2 kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace sgemm_test {

class OwnSgemm : public ::testing::Test {
 protected:
  void SetUp() override {
#if !defined(__x86_64__)
    GTEST_SKIP() << "shardflow's kernel is x86-64 only; Eigen's runs here";
#endif
    before_ = cpu::CurrentGemmKernel();
    threads_ = cpu::IntraOpThreads();
    cpu::SetGemmKernel(cpu::GemmKernel::kOwn);
  }
  void TearDown() override {
    if (!IsSkipped()) {
      cpu::SetGemmKernel(before_);
      cpu::SetIntraOpThreads(threads_);
    }
  }
  cpu::GemmKernel before_ = cpu::GemmKernel::kAuto;
  int threads_ = 1;
};

std::vector<float> Random(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(RandomNormal(seed, 0, i));
  return v;
}

struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
};
Operands Make(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t pad, uint64_t seed) {
  Operands o;
  o.lda = (ta ? m : k) + pad;
  o.ldb = (tb ? k : n) + pad;
  o.ldc = n + pad;
  o.a = Random((ta ? k : m) * o.lda, seed);
  o.b = Random((tb ? n : k) * o.ldb, seed + 1);
  o.c = Random(m * o.ldc, seed + 2);
  return o;
}

// The largest error against the double reference, relative to the sum of |terms|; and the
// padding columns of C untouched.
double WorstError(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                  const Operands& in, const std::vector<float>& out) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(ta ? in.a[p * in.lda + i] : in.a[i * in.lda + p]) *
                         (tb ? in.b[j * in.ldb + p] : in.b[p * in.ldb + j]);
        s += t;
        mag += std::abs(t);
      }
      const double c0 = in.c[i * in.ldc + j];
      const double want = alpha * s + (beta != 0 ? beta * c0 : 0.0);
      const double scale = std::abs(alpha) * mag + std::abs(beta * c0) + 1e-30;
      worst = std::max(worst, std::abs(out[i * in.ldc + j] - want) / scale);
    }
    for (int64_t j = n; j < in.ldc; ++j) {
      if (out[i * in.ldc + j] != in.c[i * in.ldc + j]) return 1e30;  // wrote outside C
    }
  }
  return worst;
}

TEST_F(OwnSgemm, EveryTileRemainderTransposeAndScale) {
  uint64_t seed = 100;
  for (int64_t m : {1, 5, 6, 7, 11, 12, 13, 25}) {
    for (int64_t n : {1, 7, 9, 15, 16, 17, 23, 24, 25, 32, 33, 48, 63, 64, 65, 130}) {
      for (int64_t k : {1, 7, 255, 257}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
          const float alpha = t == 1 ? -0.5f : 1.0f, beta = t == 0 ? 0.0f : (t == 3 ? 1.0f : 0.25f);
          const Operands in = Make(ta, tb, m, n, k, t, seed++);
          std::vector<float> c = in.c;
          cpu::Gemm<float>(ta, tb, m, n, k, alpha, in.a.data(), in.lda, in.b.data(), in.ldb, beta,
                           c.data(), in.ldc);
          ASSERT_LT(WorstError(ta, tb, m, n, k, alpha, beta, in, c), 1e-6)
              << "m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb;
        }
      }
    }
  }
}

// Many row blocks and K steps at once, and the shapes the presets' layers call.
TEST_F(OwnSgemm, LayerShapes) {
  struct Case {
    bool ta, tb;
    int64_t m, n, k;
  };
  for (const Case& s : {Case{false, false, 196, 64, 800}, Case{true, false, 800, 64, 196},
                        Case{false, true, 196, 800, 64}, Case{false, true, 64, 600, 700},
                        Case{true, false, 700, 300, 64}, Case{false, false, 250, 10, 1030}}) {
    const Operands in = Make(s.ta, s.tb, s.m, s.n, s.k, 2, 7);
    std::vector<float> c = in.c;
    cpu::Gemm<float>(s.ta, s.tb, s.m, s.n, s.k, 1.0f, in.a.data(), in.lda, in.b.data(), in.ldb,
                     1.0f, c.data(), in.ldc);
    EXPECT_LT(WorstError(s.ta, s.tb, s.m, s.n, s.k, 1.0f, 1.0f, in, c), 1e-6)
        << "m " << s.m << " n " << s.n << " k " << s.k << " ta " << s.ta << " tb " << s.tb;
  }
}

// Each element is one chain of fused multiply-adds over k: 1 or 3 threads (row pieces, panel
// pieces), a transposed B packed or the product computed transposed, all the same bits.
TEST_F(OwnSgemm, SameBitsForAnyThreadCountAndPath) {
  struct Case {
    bool ta;
    int64_t m, n, k;
  };
  // 200 x 1000 x 300 on 3 threads: rows enough for row pieces, but panels read less of B.
  for (const Case& s :
       {Case{false, 300, 200, 530}, Case{true, 40, 700, 300}, Case{false, 64, 900, 400},
        Case{true, 64, 900, 400}, Case{false, 200, 1000, 300}}) {
    // tb = false with B stored (K, N), and the same B stored transposed (N, K) for tb = true.
    const Operands in = Make(s.ta, false, s.m, s.n, s.k, 0, 21);
    std::vector<float> bt(static_cast<size_t>(s.n * s.k));
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t j = 0; j < s.n; ++j) bt[j * s.k + p] = in.b[p * s.n + j];
    }
    std::vector<float> runs[3];
    for (int r = 0; r < 3; ++r) {
      cpu::SetIntraOpThreads(r == 1 ? 3 : 1);
      runs[r] = in.c;
      cpu::Gemm<float>(s.ta, r == 2, s.m, s.n, s.k, 0.75f, in.a.data(), in.lda,
                       r == 2 ? bt.data() : in.b.data(), r == 2 ? s.k : s.n, 0.5f, runs[r].data(),
                       s.n);
    }
    EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * 4), 0)
        << "threads, m " << s.m;
    EXPECT_EQ(std::memcmp(runs[0].data(), runs[2].data(), runs[0].size() * 4), 0)
        << "transposed B, m " << s.m << " n " << s.n << " k " << s.k;
  }
}

// Few outputs over a long K (a first convolution's weight gradient) go in K slices summed in
// order: accurate, and the same bits on 1 and 3 threads.
TEST_F(OwnSgemm, LongKSlicesSameBitsForAnyThreadCount) {
  for (const bool ta : {true, false}) {
    const int64_t m = 25, n = 32, k = 41552;
    const Operands in = Make(ta, false, m, n, k, 1, 31);
    std::vector<float> runs[2];
    for (int r = 0; r < 2; ++r) {
      cpu::SetIntraOpThreads(r == 0 ? 1 : 3);
      runs[r] = in.c;
      cpu::Gemm<float>(ta, false, m, n, k, 0.5f, in.a.data(), in.lda, in.b.data(), in.ldb, 0.25f,
                       runs[r].data(), in.ldc);
    }
    EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * 4), 0) << "ta " << ta;
    EXPECT_LT(WorstError(ta, false, m, n, k, 0.5f, 0.25f, in, runs[1]), 1e-5) << "ta " << ta;
    // The slices did run: the transposed-B path (one chain over K) gives other bits.
    std::vector<float> bt(static_cast<size_t>(n * k)), chain = in.c;
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) bt[j * k + p] = in.b[p * in.ldb + j];
    }
    cpu::Gemm<float>(ta, true, m, n, k, 0.5f, in.a.data(), in.lda, bt.data(), k, 0.25f,
                     chain.data(), in.ldc);
    EXPECT_NE(std::memcmp(runs[0].data(), chain.data(), chain.size() * 4), 0) << "ta " << ta;
  }
}

TEST_F(OwnSgemm, BetaZeroNeverReadsC) {
  const int64_t m = 20, n = 70, k = 9;
  const Operands in = Make(false, true, m, n, k, 0, 5);
  for (bool tb : {false, true}) {
    std::vector<float> c(static_cast<size_t>(m * n), NAN);
    cpu::Gemm<float>(false, tb, m, n, k, 1.0f, in.a.data(), k, in.b.data(), tb ? k : n, 0.0f,
                     c.data(), n);
    for (float v : c) ASSERT_TRUE(std::isfinite(v)) << "tb " << tb;
  }
}

TEST(GemmKernelChoice, SetAndRead) {
  const cpu::GemmKernel before = cpu::CurrentGemmKernel();
  cpu::SetGemmKernel(cpu::GemmKernel::kEigen);
  EXPECT_EQ(cpu::CurrentGemmKernel(), cpu::GemmKernel::kEigen);
  cpu::SetGemmKernel(before);
  EXPECT_EQ(cpu::CurrentGemmKernel(), before);
}

}  // namespace sgemm_test
}  // namespace shardflow
