// Optimised kernels against naive references kept here: GEMM-based convolution and dense
// layers vs direct loops, Eigen GEMM in every transpose combination vs a triple loop.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/im2col.hpp"
#include "core/cpu/kernels.hpp"
#include "core/layers/conv2d.hpp"
#include "core/layers/dense.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace kernel_reference_test {

void Fill(float* p, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(RandomNormal(seed, 0, i));
}

// Every transpose of C = alpha op(A) op(B) + beta C with leading dimensions padded by `pad`,
// against a double-precision reference: the largest error, and whether the padding of C was
// left untouched.
struct GemmCheck {
  double worst = 0;
  bool padding_untouched = true;
};
GemmCheck CheckGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                    int64_t pad, uint64_t seed) {
  const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad + 1, ldc = n + pad;
  std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc), ref(m * ldc);
  Fill(a.data(), a.size(), seed);
  Fill(b.data(), b.size(), seed + 1);
  Fill(c.data(), c.size(), seed + 2);
  ref = c;
  cpu::Gemm<float>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  GemmCheck out;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = ta ? a[p * lda + i] : a[i * lda + p];
        const float bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += static_cast<double>(av) * bv;
      }
      const double want = alpha * s + beta * static_cast<double>(ref[i * ldc + j]);
      out.worst = std::max(out.worst, std::abs(c[i * ldc + j] - want));
    }
    for (int64_t j = n; j < ldc; ++j) {
      out.padding_untouched = out.padding_untouched && c[i * ldc + j] == ref[i * ldc + j];
    }
  }
  return out;
}

TEST(KernelReference, GemmAllTransposesAndStrides) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const GemmCheck r = CheckGemm(ta, tb, 5, 7, 3, 0.5f, 2.0f, 2, 1);
      EXPECT_LT(r.worst, 1e-4) << "ta " << ta << " tb " << tb;
      EXPECT_TRUE(r.padding_untouched) << "ta " << ta << " tb " << tb;
    }
  }
}

// Shapes large enough for the packed kernels of every target (the tiny case above stays in
// their edge paths); run once on the CPU's best target and once with
// SHARDFLOW_CPU_TARGET=x86-64-v3 (CTest core.unit_tests.x86_64_v3).
TEST(KernelReference, GemmPackedShapesOnThisTarget) {
  const char* env = std::getenv("SHARDFLOW_CPU_TARGET");
  const std::string target = cpu::GemmTarget();
  if (env != nullptr && std::string(env) == "x86-64-v3") {
    EXPECT_EQ(target, "x86-64-v3 (AVX2)");
  }
  EXPECT_TRUE(target == "x86-64-v3 (AVX2)" || target == "x86-64-v4 (AVX-512)") << target;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const GemmCheck r = CheckGemm(ta, tb, 67, 131, 259, 1.5f, -1.0f, 3, 4);
      EXPECT_LT(r.worst, 2e-4) << target << " ta " << ta << " tb " << tb;
      EXPECT_TRUE(r.padding_untouched) << target << " ta " << ta << " tb " << tb;
    }
  }
}

TEST(KernelReference, GemmBetaZeroIgnoresNaN) {
  std::vector<float> a{1, 2}, b{3, 4}, c{NAN};
  cpu::Gemm<float>(false, false, 1, 1, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f, c.data(), 1);
  EXPECT_EQ(c[0], 11.0f);
}

// Direct convolution, NHWC, kernel (KH, KW, C, F): the definition the GEMM version must match.
std::vector<float> NaiveConv(const std::vector<float>& x, const float* w, const float* bias,
                             int64_t b, const ConvGeometry& g, int64_t f) {
  std::vector<float> y(b * g.oh * g.ow * f);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j)
        for (int64_t o = 0; o < f; ++o) {
          double s = bias[o];
          for (int64_t di = 0; di < g.kh; ++di)
            for (int64_t dj = 0; dj < g.kw; ++dj) {
              const int64_t ih = i * g.stride - g.pad_top + di;
              const int64_t iw = j * g.stride - g.pad_left + dj;
              if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
              for (int64_t c = 0; c < g.c; ++c)
                s += static_cast<double>(x[((n * g.h + ih) * g.w + iw) * g.c + c]) *
                     w[((di * g.kw + dj) * g.c + c) * f + o];
            }
          y[((n * g.oh + i) * g.ow + j) * f + o] = static_cast<float>(s);
        }
  return y;
}

struct ConvCase {
  int64_t h, w, c, f, kh, kw, stride;
  bool same;
  int64_t batch;
};

TEST(KernelReference, ConvMatchesDirectConvolution) {
  for (const ConvCase& k :
       {ConvCase{28, 28, 1, 8, 5, 5, 1, true, 3}, ConvCase{9, 7, 3, 4, 3, 3, 2, true, 2},
        ConvCase{9, 7, 3, 4, 3, 2, 2, false, 2}, ConvCase{6, 6, 2, 3, 4, 4, 1, true, 1},
        ConvCase{64, 64, 4, 4, 3, 3, 1, true, 40},  // several im2col chunks
        ConvCase{5, 5, 2, 2, 1, 1, 1, false, 0}}) {
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + " batch " +
                 std::to_string(k.batch));
    Arena<float> arena;
    auto layer = MakeConv2D<float>({.filters = k.f,
                                    .kernel_h = k.kh,
                                    .kernel_w = k.kw,
                                    .stride = k.stride,
                                    .same_padding = k.same});
    BuildContext<float> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_conv2d"};
    layer->Build({k.h, k.w, k.c}, ctx);
    arena.Allocate();
    Fill(arena.params(), arena.size(), 9);
    Tensor x(DType::kFloat32, {k.batch, k.h, k.w, k.c});
    Fill(x.data<float>(), x.num_elements(), 10);
    const Tensor y = layer->Forward(x, {});
    const auto g = MakeConvGeometry(k.h, k.w, k.c, k.kh, k.kw, k.stride, k.same);
    std::vector<float> xv(x.data<float>(), x.data<float>() + x.num_elements());
    const auto ref = NaiveConv(xv, arena.param(0), arena.param(1), k.batch, g, k.f);
    ASSERT_EQ(y.num_elements(), static_cast<int64_t>(ref.size()));
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y.data<float>()[i], ref[i], 1e-3) << i;
  }
}

TEST(KernelReference, SameGeometryMatchesTensorFlow) {
  // TF: out = ceil(in / stride), the odd padding pixel at the bottom/right.
  const auto g = MakeConvGeometry(28, 27, 1, 5, 4, 2, true);
  EXPECT_EQ(g.oh, 14);
  EXPECT_EQ(g.ow, 14);
  EXPECT_EQ(g.pad_top, 1);   // total 3
  EXPECT_EQ(g.pad_left, 1);  // total 3
  EXPECT_THROW(MakeConvGeometry(3, 3, 1, 5, 5, 1, false), Error);
}

TEST(KernelReference, DenseMatchesNaiveMatmul) {
  Arena<float> arena;
  auto layer = MakeDense<float>({.units = 13});
  BuildContext<float> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_dense"};
  layer->Build({37}, ctx);
  arena.Allocate();
  Fill(arena.params(), arena.size(), 4);
  Tensor x(DType::kFloat32, {6, 37});
  Fill(x.data<float>(), x.num_elements(), 5);
  const Tensor y = layer->Forward(x, {});
  const float* w = arena.param(0);
  const float* b = arena.param(1);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 13; ++j) {
      double s = b[j];
      for (int64_t p = 0; p < 37; ++p)
        s += static_cast<double>(x.data<float>()[i * 37 + p]) * w[p * 13 + j];
      EXPECT_NEAR(y.data<float>()[i * 13 + j], s, 1e-4);
    }
}

}  // namespace kernel_reference_test
}  // namespace shardflow

namespace shardflow {
namespace kernel_reference_test {

TEST(KernelReference, GemmResultDoesNotDependOnThreadCount) {
  const int64_t m = 300, n = 200, k = 150;
  std::vector<float> a(m * k), b(k * n), c1(m * n), c2(m * n);
  Fill(a.data(), a.size(), 11);
  Fill(b.data(), b.size(), 12);
  const int before = cpu::IntraOpThreads();
  cpu::SetIntraOpThreads(1);
  EXPECT_EQ(cpu::IntraOpThreads(), 1);
  cpu::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c1.data(), n);
  cpu::SetIntraOpThreads(2);
  cpu::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c2.data(), n);
  cpu::SetIntraOpThreads(before);
  EXPECT_EQ(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)), 0);
  EXPECT_GE(cpu::DefaultIntraOpThreads(), 1);
}

// Batch normalisation's row blocks run on the pool: forward and backward give the same bits on
// one thread and two (30,000 rows: 30 blocks, so even 5 channels make two parallel pieces of
// the sums; 16 channels: the fixed-width loops; 5: the rest).
TEST(KernelReference, BatchNormDoesNotDependOnThreadCount) {
  for (int64_t c : {int64_t{5}, int64_t{16}}) {
    const int64_t n = 30000;
    const BatchNormParams p{.n = n, .c = c, .training = true};
    std::vector<float> x(n * c), dy(n * c), gamma(c), beta(c);
    Fill(x.data(), x.size(), 21);
    Fill(dy.data(), dy.size(), 22);
    Fill(gamma.data(), gamma.size(), 23);
    Fill(beta.data(), beta.size(), 24);
    struct Out {
      std::vector<float> mm, mv, y, dg, db, dx;
      std::vector<double> saved;  // mean (C), inv_std (C)
    };
    auto run = [&](int threads) {
      Out o{std::vector<float>(c, 0.0f),
            std::vector<float>(c, 1.0f),
            std::vector<float>(n * c),
            std::vector<float>(c, 0.0f),
            std::vector<float>(c, 0.0f),
            std::vector<float>(n * c),
            std::vector<double>(kBatchNormSavedPerChannel * c)};
      const int before = cpu::IntraOpThreads();
      cpu::SetIntraOpThreads(threads);
      cpu::BatchNorm<float>(p, x.data(), gamma.data(), beta.data(), o.mm.data(), o.mv.data(),
                            o.saved.data(), o.y.data());
      cpu::BatchNormGrad<float>(p, dy.data(), x.data(), gamma.data(), o.saved.data(), o.dg.data(),
                                o.db.data(), o.dx.data());
      cpu::SetIntraOpThreads(before);
      return o;
    };
    const Out one = run(1), two = run(2);
    EXPECT_EQ(one.mm, two.mm);
    EXPECT_EQ(one.mv, two.mv);
    EXPECT_EQ(one.saved, two.saved);
    EXPECT_EQ(one.y, two.y);
    EXPECT_EQ(one.dg, two.dg);
    EXPECT_EQ(one.db, two.db);
    EXPECT_EQ(one.dx, two.dx);
    // The saved statistics normalise the batch: every channel's xhat = (x - mean) inv_std has
    // mean ~0 and variance ~1.
    for (int64_t ch = 0; ch < c; ++ch) {
      std::vector<double> xhat(n);
      for (int64_t r = 0; r < n; ++r) xhat[r] = (x[r * c + ch] - one.saved[ch]) * one.saved[c + ch];
      double m = 0, v = 0;
      for (int64_t r = 0; r < n; ++r) m += xhat[r];
      m /= n;
      for (int64_t r = 0; r < n; ++r) v += (xhat[r] - m) * (xhat[r] - m);
      EXPECT_NEAR(m, 0.0, 1e-5) << "channel " << ch;
      EXPECT_NEAR(v / n, 1.0, 1e-2) << "channel " << ch;
    }
  }
}

TEST(KernelReference, DefaultThreadsFollowTheBindingThenTheNodeShare) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (CPU_COUNT(&all) == machine) {  // unbound: the machine's cores shared by the node's ranks
    EXPECT_EQ(cpu::DefaultThreadsPerRank(1), machine);
    EXPECT_EQ(cpu::DefaultThreadsPerRank(machine), 1);
    EXPECT_EQ(cpu::DefaultThreadsPerRank(4 * machine), 1);
  }
  if (machine < 2) GTEST_SKIP() << "one core: no binding narrower than the machine";
  // Bound to one core (as mpirun --bind-to core does): one thread, whatever the rank count.
  // The mask is per thread, so this thread's change does not leak into other tests.
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(cpu::DefaultThreadsPerRank(1), 1);
  EXPECT_EQ(cpu::DefaultThreadsPerRank(3), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

}  // namespace kernel_reference_test
}  // namespace shardflow
