// The CUDA backend's kernels, run by their host twin (core/backend/host_twin.hpp), against the
// CPU backend: every op of shardflow::Backend on awkward shapes, then whole training runs of an
// MLP, a CNN, a ResNet block model and an LSTM with the twin installed as the CPU backend. What
// this covers of the CUDA backend: each op's decomposition into index kernels, the kernels'
// indexing and arithmetic (the same SF_HOST_DEVICE code nvcc compiles). What it cannot: the
// launch code, device memory and cuBLAS: the GPU suite (tests/cuda, label gpu) compiles this
// file again with SF_TEST_DEVICE_MIRROR, where the backend under test is the CUDA backend itself
// behind host-memory mirrors (tests/cuda/device_mirror.hpp), and every test skips without a GPU.
//
// Tolerances are a normalised error max|twin - cpu| / max(1, max|cpu|): the two sides compile
// separately and the compiler may fuse a multiply-add in one and not the other (x86-64-v3 has
// FMA), so float results may differ in the last bits; sums taken in another order (chunked flat
// sums, the index-kernel GEMM against Eigen's blocked one) get a looser bound, stated per test.
#include "core/backend/host_twin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"
#include "tests/core/host_twin_support.hpp"
#if defined(SF_TEST_DEVICE_MIRROR)
#include "tests/cuda/device_mirror.hpp"
#endif

namespace shardflow {
namespace host_twin_test {

using namespace twin_testing;  // NOLINT(google-build-using-namespace): the shared helpers

TEST_F(HostTwin, ElementWiseOps) {
  Both b;
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}}) {
    const auto x = Random<float>(n, 1, -3, 3), y = Random<float>(n, 2, -3, 3),
               dy = Random<float>(n, 3);
    std::vector<float> c1(n), c2(n);
    b.cpu.Fill(n, 2.5f, c1.data());
    b.twin.Fill(n, 2.5f, c2.data());
    EXPECT_TWIN(c2, c1, kExact);
    b.cpu.Add(n, x.data(), y.data(), c1.data());
    b.twin.Add(n, x.data(), y.data(), c2.data());
    EXPECT_TWIN(c2, c1, kExact);
    b.cpu.Mul(n, x.data(), y.data(), c1.data());
    b.twin.Mul(n, x.data(), y.data(), c2.data());
    EXPECT_TWIN(c2, c1, kExact);
    b.cpu.Scale(n, -0.3f, c1.data());
    b.twin.Scale(n, -0.3f, c2.data());
    EXPECT_TWIN(c2, c1, kExact);
    for (auto kind : {ActivationKind::kRelu, ActivationKind::kGelu, ActivationKind::kTanh,
                      ActivationKind::kSigmoid}) {
      std::vector<float> a1(n), a2(n), g1(n), g2(n);
      b.cpu.Activation(kind, n, x.data(), a1.data());
      b.twin.Activation(kind, n, x.data(), a2.data());
      EXPECT_TWIN(a2, a1, kFloatTol) << static_cast<int>(kind);
      b.cpu.ActivationGrad(kind, n, x.data(), a1.data(), dy.data(), g1.data());
      b.twin.ActivationGrad(kind, n, x.data(), a1.data(), dy.data(), g2.data());
      EXPECT_TWIN(g2, g1, kFloatTol) << static_cast<int>(kind);
    }
  }
}

TEST_F(HostTwin, RowOpsRepeatAndColumnSums) {
  Both b;
  const int64_t rows = 7, cols = 5, ldx = 9;
  const auto x = Random<float>(rows * ldx, 4), row = Random<float>(cols, 5);
  std::vector<float> y1 = Random<float>(rows * cols, 6), y2 = y1;
  b.cpu.AddRows(rows, cols, x.data(), ldx, y1.data());
  b.twin.AddRows(rows, cols, x.data(), ldx, y2.data());
  EXPECT_TWIN(y2, y1, kExact);
  b.cpu.BroadcastRows(rows, cols, row.data(), y1.data());
  b.twin.BroadcastRows(rows, cols, row.data(), y2.data());
  EXPECT_TWIN(y2, y1, kExact);
  // Transpose over more than one 32 x 32 block each way, and its definition.
  const int64_t tr = 37, tc = 70;
  const auto t = Random<float>(tr * tc, 9);
  std::vector<float> t1(tr * tc), t2(tr * tc);
  b.cpu.Transpose(tr, tc, t.data(), t1.data());
  b.twin.Transpose(tr, tc, t.data(), t2.data());
  EXPECT_TWIN(t2, t1, kExact);
  EXPECT_EQ(t1[5 * tr + 36], t[36 * tc + 5]);
  EXPECT_EQ(t1[69 * tr + 0], t[69]);
  std::vector<float> s1 = Random<float>(cols, 7), s2 = s1;
  const auto big = Random<float>(rows * cols, 8);
  b.cpu.AddColumnSums(rows, cols, big.data(), s1.data());
  b.twin.AddColumnSums(rows, cols, big.data(), s2.data());
  EXPECT_TWIN(s2, s1, kExact);  // same order: each column summed row by row
  const int64_t bb = 3, times = 4, h = 5;
  const auto xr = Random<float>(bb * h, 9);
  std::vector<float> r1(bb * times * h), r2(r1.size());
  b.cpu.Repeat(bb, times, h, xr.data(), r1.data());
  b.twin.Repeat(bb, times, h, xr.data(), r2.data());
  EXPECT_TWIN(r2, r1, kExact);
  const auto dyr = Random<float>(bb * times * h, 10);
  std::vector<float> d1(bb * h, 9.0f), d2(bb * h, -9.0f);  // overwritten
  b.cpu.RepeatGrad(bb, times, h, dyr.data(), d1.data());
  b.twin.RepeatGrad(bb, times, h, dyr.data(), d2.data());
  EXPECT_TWIN(d2, d1, kExact);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4096}, int64_t{10001}}) {
    const auto v = Random<float>(n, 11);
    const double want = b.cpu.SumSquares(n, v.data()), got = b.twin.SumSquares(n, v.data());
    EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, want)) << n;
  }
}

TEST_F(HostTwin, GemmEveryTranspositionAndLeadingDimension) {
  Both b;
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c :
       {Case{1, 1, 1}, Case{3, 5, 7}, Case{17, 9, 33}, Case{4, 6, 0}, Case{0, 3, 2}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 0.5f}) {
          const int64_t lda = (ta ? c.m : c.k) + 2, ldb = (tb ? c.k : c.n) + 1, ldc = c.n + 3;
          const auto a = Random<float>((ta ? c.k : c.m) * lda + 1, 12);
          const auto bm = Random<float>((tb ? c.n : c.k) * ldb + 1, 13);
          std::vector<float> c1 = Random<float>(c.m * ldc + 1, 14), c2 = c1;
          b.cpu.Gemm(ta, tb, c.m, c.n, c.k, 1.5f, a.data(), lda, bm.data(), ldb, beta, c1.data(),
                     ldc);
          b.twin.Gemm(ta, tb, c.m, c.n, c.k, 1.5f, a.data(), lda, bm.data(), ldb, beta, c2.data(),
                      ldc);
          // Sums of up to 33 products taken in another order: a few ulps of the sum's magnitude.
          EXPECT_TWIN(c2, c1, 1e-5) << c.m << "x" << c.n << "x" << c.k << " ta=" << ta
                                    << " tb=" << tb << " beta=" << beta;
        }
  }
}

TEST_F(HostTwin, ConvolutionDataMovement) {
  Both b;
  struct Case {
    int64_t h, w, c, kh, kw, stride;
    bool same;
  };
  for (const Case c :
       {Case{5, 5, 1, 3, 3, 1, true}, Case{7, 6, 3, 5, 3, 2, true}, Case{7, 7, 2, 3, 3, 2, false},
        Case{4, 4, 2, 1, 1, 1, true}, Case{6, 5, 2, 2, 4, 3, true}}) {
    const auto g = MakeConvGeometry(c.h, c.w, c.c, c.kh, c.kw, c.stride, c.same);
    const int64_t batch = 2, rows = batch * g.oh * g.ow, row = c.kh * c.kw * c.c;
    const auto x = Random<float>(batch * c.h * c.w * c.c, 15);
    std::vector<float> cols1(rows * row), cols2(rows * row, 99.0f);
    b.cpu.Im2Col(g, batch, x.data(), cols1.data());
    b.twin.Im2Col(g, batch, x.data(), cols2.data());
    EXPECT_TWIN(cols2, cols1, kExact);
    const auto dcols = Random<float>(rows * row, 16);
    std::vector<float> dx1 = Random<float>(batch * c.h * c.w * c.c, 17), dx2 = dx1;
    b.cpu.Col2ImAdd(g, batch, dcols.data(), dx1.data());
    b.twin.Col2ImAdd(g, batch, dcols.data(), dx2.data());
    EXPECT_TWIN(dx2, dx1, kExact) << c.h << "x" << c.w << " k" << c.kh << "x" << c.kw << " s"
                                  << c.stride;
  }
}

// Equal bits, except that any two NaNs are equal: where overlapping windows add two NaNs of
// different signs, which one the sum keeps is the compiler's choice of operand order (it
// differed between the -O3 and the sanitizer builds).
bool SameBitsAnyNan(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  }
  return true;
}

// The CPU's max-pool gradient paths (2 x 2 / 2, windows that tile, the general one) give the
// twin's bits when dy is not finite or is -0: losers of an Inf or NaN get NaN (0 + 0 * Inf),
// a -0 or negative dy leaves +0 at the losers, as 0 += hit * dy does. With a ReLU absorbed
// (relu), each path gives the bits of the ReLU's own gradient pass followed by the pooling's.
// Windows that tile the image give each element one term: bits exact, NaNs included.
TEST_F(HostTwin, MaxPoolGradientBitsWithNonFiniteAndSignedZeroGradients) {
  Both b;
  struct Case {
    int64_t h, w, k, stride;
  };
  for (const Case c : {Case{4, 5, 2, 2}, Case{6, 7, 3, 3}, Case{5, 5, 3, 2}}) {
    PoolGeometry g{.h = c.h, .w = c.w, .c = 11, .k = c.k, .stride = c.stride};  // 8 + 3 lanes
    g.oh = (c.h - c.k) / c.stride + 1;
    g.ow = (c.w - c.k) / c.stride + 1;
    const int64_t in = c.h * c.w * g.c, out = g.oh * g.ow * g.c;
    const auto x = Random<float>(in, 31, -2.0, 0.5);  // windows of either sign
    std::vector<float> y(out), dy(out), dm(out), dx1(in, 7.0f), dx2(in, -7.0f), dx3(in, 1.0f);
    const float special[] = {INFINITY, -INFINITY, NAN, -0.0f, -2.0f, 3.0f};
    for (int64_t i = 0; i < out; ++i) dy[i] = special[i % 6];
    b.cpu.Pool2D(g, true, 1, x.data(), y.data());
    int negative = 0;
    for (float v : y) negative += v < 0.0f;
    EXPECT_GT(negative, 0) << "no window the ReLU stops";
    const auto same = [&](const std::vector<float>& p, const std::vector<float>& q) {
      if (c.k != c.stride) return SameBitsAnyNan(p, q);
      return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0;
    };
    for (bool relu : {false, true}) {
      b.cpu.Pool2DGrad(g, true, relu, 1, x.data(), y.data(), dy.data(), dx1.data());
      b.twin.Pool2DGrad(g, true, relu, 1, x.data(), y.data(), dy.data(), dx2.data());
      EXPECT_TRUE(same(dx1, dx2)) << "k " << c.k << " stride " << c.stride << " relu " << relu;
    }
    b.cpu.ActivationGrad(ActivationKind::kRelu, out, y.data(), y.data(), dy.data(), dm.data());
    b.cpu.Pool2DGrad(g, true, false, 1, x.data(), y.data(), dm.data(), dx3.data());
    EXPECT_TRUE(same(dx1, dx3)) << "k " << c.k << " stride " << c.stride
                                << ": fused and unfused ReLU gradients differ";
  }
}

TEST_F(HostTwin, PoolingWithOverlappingWindowsAndTies) {
  Both b;
  struct Case {
    int64_t h, w, c, k, stride;
  };
  // Overlapping windows, stride past the window (gaps), rows left uncovered at the end; windows
  // that tile the image (k == stride: the CPU's write-once path), with a row and a column left
  // uncovered in the 7 x 5 case.
  for (const Case c :
       {Case{4, 4, 3, 2, 2}, Case{7, 7, 2, 3, 2}, Case{5, 6, 1, 3, 1}, Case{1, 1, 4, 1, 1},
        Case{6, 6, 1, 2, 3}, Case{8, 8, 1, 3, 2}, Case{7, 5, 2, 2, 3}, Case{7, 5, 3, 2, 2},
        Case{9, 9, 2, 3, 3}, Case{6, 5, 19, 2, 2}}) {  // 2 x 8 channels vectorised, 3 one by one
    PoolGeometry g{.h = c.h, .w = c.w, .c = c.c, .k = c.k, .stride = c.stride};
    g.oh = (c.h - c.k) / c.stride + 1;
    g.ow = (c.w - c.k) / c.stride + 1;
    const int64_t batch = 3, in = batch * c.h * c.w * c.c, out = batch * g.oh * g.ow * c.c;
    // Values on a coarse grid so windows hold ties: the first maximum must win on both sides.
    auto x = Random<float>(in, 18);
    for (auto& v : x) v = std::round(v * 2.0f) / 2.0f;
    const auto dy = Random<float>(out, 19);
    for (bool max : {true, false}) {
      std::vector<float> y1(out), y2(out), dx1(in, 5.0f), dx2(in, -5.0f);
      b.cpu.Pool2D(g, max, batch, x.data(), y1.data());
      b.twin.Pool2D(g, max, batch, x.data(), y2.data());
      EXPECT_TWIN(y2, y1, kExact);
      for (bool relu : {false, max}) {
        b.cpu.Pool2DGrad(g, max, relu, batch, x.data(), y1.data(), dy.data(), dx1.data());
        b.twin.Pool2DGrad(g, max, relu, batch, x.data(), y1.data(), dy.data(), dx2.data());
        EXPECT_TWIN(dx2, dx1, kFloatTol)
            << "max=" << max << " relu=" << relu << " k=" << c.k << " s=" << c.stride;
      }
    }
  }
  const int64_t bb = 2, p = 9, ch = 4;
  const auto x = Random<float>(bb * p * ch, 20), dy = Random<float>(bb * ch, 21);
  std::vector<float> y1(bb * ch), y2(bb * ch), dx1(bb * p * ch), dx2(bb * p * ch);
  b.cpu.GlobalAvgPool(bb, p, ch, x.data(), y1.data());
  b.twin.GlobalAvgPool(bb, p, ch, x.data(), y2.data());
  EXPECT_TWIN(y2, y1, kExact);
  b.cpu.GlobalAvgPoolGrad(bb, p, ch, dy.data(), dx1.data());
  b.twin.GlobalAvgPoolGrad(bb, p, ch, dy.data(), dx2.data());
  EXPECT_TWIN(dx2, dx1, kExact);
}

template <typename L>
Tensor Labels(const std::vector<int64_t>& v, DType dtype) {
  Tensor t(dtype, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<L>()[i] = static_cast<L>(v[i]);
  return t;
}

TEST_F(HostTwin, LossesEveryLabelTypeAndTheBadLabelMessage) {
  Both b;
  const int64_t bb = 9, k = 10;
  const auto z = Random<float>(bb * k, 30, -6, 6);
  std::vector<int64_t> lv(bb);
  for (int64_t i = 0; i < bb; ++i) lv[i] = (i * 7) % k;
  for (const Tensor& labels :
       {Labels<uint8_t>(lv, DType::kUInt8), Labels<int32_t>(lv, DType::kInt32),
        Labels<int64_t>(lv, DType::kInt64)}) {
    std::vector<float> d1(bb * k), d2(bb * k);
    const double l1 = b.cpu.SoftmaxCrossEntropy(bb, k, z.data(), labels, d1.data());
    const double l2 = b.twin.SoftmaxCrossEntropy(bb, k, z.data(), labels, d2.data());
    EXPECT_NEAR(l2, l1, 1e-12 * std::max(1.0, l1));
    EXPECT_TWIN(d2, d1, kFloatTol);
    EXPECT_NEAR(b.twin.SoftmaxCrossEntropy(bb, k, z.data(), labels, nullptr), l1, 1e-12 * l1);
  }
  EXPECT_EQ(b.twin.SoftmaxCrossEntropy(0, k, z.data(), Labels<int32_t>({}, DType::kInt32), nullptr),
            0.0);
  std::vector<int64_t> bad = lv;
  bad[3] = k;
  bad[5] = -1;
  std::string want, got;
  std::vector<float> d(bb * k);
  try {
    b.cpu.SoftmaxCrossEntropy(bb, k, z.data(), Labels<int32_t>(bad, DType::kInt32), d.data());
  } catch (const Error& e) {
    want = e.what();
  }
  try {
    b.twin.SoftmaxCrossEntropy(bb, k, z.data(), Labels<int32_t>(bad, DType::kInt32), d.data());
  } catch (const Error& e) {
    got = e.what();
  }
  EXPECT_NE(want.find("batch row 3"), std::string::npos) << want;
  EXPECT_EQ(got, want);
  for (int64_t n : {int64_t{0}, int64_t{3}, int64_t{9000}}) {
    const auto y = Random<float>(n, 31), t = Random<float>(n, 32);
    std::vector<float> d1(n), d2(n);
    const double l1 = b.cpu.MeanSquaredError(n, y.data(), t.data(), d1.data());
    const double l2 = b.twin.MeanSquaredError(n, y.data(), t.data(), d2.data());
    EXPECT_NEAR(l2, l1, 1e-12 * std::max(1.0, l1)) << n;
    EXPECT_TWIN(d2, d1, kExact);
  }
}

TEST_F(HostTwin, RandomFillsAndDropoutDrawTheSameNumbers) {
  Both b;
  const int64_t n = 3001;
  const auto x = Random<float>(n, 33);
  std::vector<float> m1(n), m2(n), y1(n), y2(n);
  b.cpu.DropoutMask(n, 0.3f, 1.0f / 0.7f, 5, 9, x.data(), m1.data(), y1.data());
  b.twin.DropoutMask(n, 0.3f, 1.0f / 0.7f, 5, 9, x.data(), m2.data(), y2.data());
  EXPECT_TWIN(m2, m1, kExact);
  EXPECT_TWIN(y2, y1, kExact);
  b.cpu.FillNormal(n, 0.05, 5, 10, m1.data());
  b.twin.FillNormal(n, 0.05, 5, 10, m2.data());
  EXPECT_TWIN(m2, m1, kExact);
  b.cpu.FillUniform(n, 0.2, 5, 11, m1.data());
  b.twin.FillUniform(n, 0.2, 5, 11, m2.data());
  EXPECT_TWIN(m2, m1, kExact);
  const SliceIndex s{.outer = 3, .full = 10, .begin = 4, .size = 5, .inner = 7};
  const int64_t ns = s.outer * s.size * s.inner;
  std::vector<float> s1(ns), s2(ns), t1(ns), t2(ns);
  b.cpu.DropoutMaskSlice(s, 0.5f, 2.0f, 6, 1, x.data(), s1.data(), t1.data());
  b.twin.DropoutMaskSlice(s, 0.5f, 2.0f, 6, 1, x.data(), s2.data(), t2.data());
  EXPECT_TWIN(s2, s1, kExact);
  EXPECT_TWIN(t2, t1, kExact);
  b.cpu.FillNormalSlice(s, 1.0, 6, 2, s1.data());
  b.twin.FillNormalSlice(s, 1.0, 6, 2, s2.data());
  EXPECT_TWIN(s2, s1, kExact);
  b.cpu.FillUniformSlice(s, 1.0, 6, 3, s1.data());
  b.twin.FillUniformSlice(s, 1.0, 6, 3, s2.data());
  EXPECT_TWIN(s2, s1, kExact);
}

TEST_F(HostTwin, OptimizerUpdatesAndTheLstmCell) {
  Both b;
  const int64_t n = 1000;
  const auto g = Random<float>(n, 34);
  for (const SgdParams p :
       {SgdParams{.lr = 0.1f}, SgdParams{.lr = 0.1f, .momentum = 0.9f},
        SgdParams{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true}}) {
    std::vector<float> w1 = Random<float>(n, 35), v1 = Random<float>(n, 36);
    std::vector<float> w2 = w1, v2 = v1;
    for (int step = 0; step < 3; ++step) {
      b.cpu.SgdUpdate(p, n, w1.data(), g.data(), v1.data());
      b.twin.SgdUpdate(p, n, w2.data(), g.data(), v2.data());
    }
    EXPECT_TWIN(w2, w1, kFloatTol);
    EXPECT_TWIN(v2, v1, kFloatTol);
  }
  const AdamParams ap{
      .b1 = 0.9f, .b2 = 0.999f, .l2 = 1e-4f, .shrink = 1.0f, .step = 1e-3f, .eps = 1e-7f};
  std::vector<float> w1 = Random<float>(n, 37), m1(n), v1(n);
  std::vector<float> w2 = w1, m2(n), v2(n);
  for (int step = 0; step < 3; ++step) {
    b.cpu.AdamUpdate(ap, n, w1.data(), g.data(), m1.data(), v1.data());
    b.twin.AdamUpdate(ap, n, w2.data(), g.data(), m2.data(), v2.data());
  }
  EXPECT_TWIN(w2, w1, kFloatTol);
  EXPECT_TWIN(m2, m1, kFloatTol);
  EXPECT_TWIN(v2, v1, kFloatTol);
  // Two LSTM steps over a batch of 3 with H = 4, rows strided inside wider buffers.
  const int64_t bb = 3, h = 4, ldz = 4 * h + 2, ldc = 2 * h + 1;
  for (bool has_prev : {false, true}) {
    std::vector<float> z1 = Random<float>(bb * ldz, 38, -2, 2), z2 = z1;
    std::vector<float> c1 = Random<float>(bb * ldc + h, 39), c2 = c1;
    std::vector<float> hs1(bb * ldc + h), hs2(bb * ldc + h);
    b.cpu.LstmCell(bb, h, z1.data(), ldz, c1.data() + h, hs1.data() + h, ldc, has_prev);
    b.twin.LstmCell(bb, h, z2.data(), ldz, c2.data() + h, hs2.data() + h, ldc, has_prev);
    EXPECT_TWIN(z2, z1, kFloatTol);
    EXPECT_TWIN(c2, c1, kFloatTol);
    EXPECT_TWIN(hs2, hs1, kFloatTol);
    const auto dh = Random<float>(bb * h, 40);
    std::vector<float> dc1 = Random<float>(bb * h, 41), dc2 = dc1;
    std::vector<float> dz1(bb * ldz), dz2(bb * ldz);
    b.cpu.LstmCellGrad(bb, h, z1.data(), ldz, c1.data() + h, ldc, has_prev, dh.data(), dc1.data(),
                       dz1.data());
    b.twin.LstmCellGrad(bb, h, z1.data(), ldz, c1.data() + h, ldc, has_prev, dh.data(), dc2.data(),
                        dz2.data());
    EXPECT_TWIN(dc2, dc1, kFloatTol);
    EXPECT_TWIN(dz2, dz1, kFloatTol);
  }
}

// Installs the host twin as the CPU backend for float while alive, so whole models run every
// kernel call through the CUDA backend's index kernels.
class TwinAsCpu {
 public:
  TwinAsCpu() {
    DeviceRuntime twin = cpu::CpuRuntime();
    twin.f32 = &UnderTest<float>();
    RegisterDeviceRuntime(twin);
  }
  ~TwinAsCpu() { RegisterDeviceRuntime(cpu::CpuRuntime()); }
};

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
};

// `steps` steps of `optimizer` on a fixed random batch; the losses and the final parameters.
// With device = kCuda the model lives on the device: its parameters, activations, gradients
// and optimizer state are device tensors; the input batch and labels stay host tensors, which
// the model and the loss copy over.
TrainRun Train(const std::string& spec, const Shape& sample, int steps, bool regression,
               const std::string& optimizer, Device device = Device::kCpu) {
  Shape xs = {8};
  xs.insert(xs.end(), sample.begin(), sample.end());
  const int64_t nx = NumElements(xs);
  Tensor x(DType::kFloat32, xs);
  for (int64_t i = 0; i < nx; ++i) x.data<float>()[i] = RandomUniform(3, 1, i) * 2.0f - 1.0f;
  Tensor labels(DType::kInt64, {8});
  for (int64_t i = 0; i < 8; ++i) labels.data<int64_t>()[i] = (i * 3) % 10;
  Sequential<float> m(spec, sample, {.seed = 11, .device = device});
  auto opt = MakeOptimizer({.name = optimizer}, m.arena().size());
  TrainRun run;
  Tensor d;
  for (int step = 0; step < steps; ++step) {
    m.set_step(step);
    m.arena().ZeroGrads();
    const Tensor y = m.Forward(x, true);
    EXPECT_EQ(y.device(), device);
    run.losses.push_back(regression ? MeanSquaredError<float>(y, x, &d)
                                    : SoftmaxCrossEntropy<float>(y, labels, &d));
    m.Backward(d);
    opt->Step(m.arena(), 0.01);
  }
  const Tensor params = m.arena().params_tensor().To(Device::kCpu);
  run.params.assign(params.data<float>(), params.data<float>() + m.arena().size());
  return run;
}

// The models of the tracking tests: spec, per-sample shape, steps, regression?, optimizer, bound.
// SGD with momentum for the convolutional models: Adam divides by the root of the squared
// gradient, so a parameter whose gradient is rounding noise (around 1e-9) takes full steps of
// the learning rate in whichever direction the noise points, on either side.
struct TrackCase {
  std::string spec;
  Shape sample;
  int steps;
  bool regression;
  std::string optimizer;
  double tol;
};
const std::vector<TrackCase>& TrackCases() {
  static const std::vector<TrackCase> cases = {
      {"flatten, dense:32, gelu, dropout:0.25, dense:16, tanh, dense:10",
       {6, 6},
       20,
       false,
       "adam",
       1e-4},
      {"conv:4:3x3:same, batchnorm, relu, maxpool:3:2, conv:6:3x3:valid:s2, sigmoid, flatten, "
       "dense:10",
       {11, 11, 2},
       15,
       false,
       "sgd",
       1e-5},
      {"conv:4:3x3:same, residual:4, residual:8:2, avgpool:2, gap, dense:10",
       {8, 8, 1},
       10,
       false,
       "sgd",
       1e-5},
      {"lstm:6, repeat, lstm:6:seq, dense:3", {5, 3}, 15, true, "adam", 1e-4}};
  return cases;
}

void ExpectTracks(const TrackCase& c, const TrainRun& got) {
  const TrainRun want = Train(c.spec, c.sample, c.steps, c.regression, c.optimizer);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_NEAR(got.losses[i], want.losses[i], c.tol * std::max(1.0, want.losses[i]))
        << c.spec << " step " << i;
  }
  EXPECT_TWIN(got.params, want.params, c.tol) << c.spec;
  EXPECT_LT(want.losses.back(), want.losses.front()) << c.spec << " did not learn";
}

// Whole training runs through the twin track the CPU backend. The bound is loose enough for
// float rounding differences (FMA, GEMM order) compounding over the steps, and tight enough that
// a wrong index anywhere (a transposed gradient, a dropped window) fails it by orders of
// magnitude.
TEST_F(HostTwin, TrainingTracksTheCpuBackend) {
  for (const TrackCase& c : TrackCases()) {
    TrainRun got;
    {
      TwinAsCpu twin;
      got = Train(c.spec, c.sample, c.steps, c.regression, c.optimizer);
    }
    ExpectTracks(c, got);
  }
}

// The same models with every tensor on the CUDA device: here the simulated one (the host twin
// behind Device::kCuda, with tensors flagged cuda, so any host read of device memory throws);
// in the GPU suite the GPU itself.
TEST_F(HostTwin, ModelsOnTheCudaDeviceTrackTheCpuBackend) {
#if defined(SF_TEST_DEVICE_MIRROR)
  cuda::testing::DeviceMirror<float>();  // installs the CUDA backend on device 0
#else
  SimulatedCudaDevice device;
#endif
  for (const TrackCase& c : TrackCases()) {
    ExpectTracks(c, Train(c.spec, c.sample, c.steps, c.regression, c.optimizer, Device::kCuda));
  }
}

#if defined(SF_TEST_DEVICE_MIRROR)
// The same models with cuDNN's pooling, activations, training batch norm and LSTM (the default
// on a GPU; the other tests here switch them off to check our kernels). cuDNN computes a float
// model's batch statistics in float (ours in double) and the LSTM's sums in its own order, hence
// ten times the kernels' bound for the models with either; none of cuDNN's calls may be refused.
TEST_F(HostTwin, ModelsOnTheGpuWithCudnnOpsTrackTheCpuBackend) {
  cuda::testing::DeviceMirror<float>();
  cuda::SetCudnnOps(true);
  const int64_t refusals = cuda::CudnnRefusals();
  for (const TrackCase& c : TrackCases()) {
    TrackCase bound = c;
    const bool reordered = c.spec.find("batchnorm") != std::string::npos ||
                           c.spec.find("residual") != std::string::npos ||
                           c.spec.find("lstm") != std::string::npos;
    if (reordered) bound.tol *= 10;
    ExpectTracks(bound, Train(c.spec, c.sample, c.steps, c.regression, c.optimizer, Device::kCuda));
  }
  EXPECT_EQ(cuda::CudnnRefusals(), refusals) << "cuDNN refused a call (see the warning)";
}
#endif

// On the device, host code cannot reach the model's memory by accident: the arena's host
// pointer and a device tensor's data<T>() throw, naming the device; the copies are explicit.
TEST_F(HostTwin, HostReadsOfDeviceMemoryAreRefused) {
#if defined(SF_TEST_DEVICE_MIRROR)
  cuda::testing::DeviceMirror<float>();
#else
  SimulatedCudaDevice device;
#endif
  Sequential<float> m("flatten, dense:4", {3}, {.device = Device::kCuda});
  EXPECT_EQ(m.arena().device(), Device::kCuda);
  try {
    m.arena().params();
    FAIL() << "a host pointer into the device arena";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("on device cuda"), std::string::npos) << e.what();
  }
  Tensor x(DType::kFloat32, {2, 3});
  x.data<float>()[4] = 1.5f;
  const Tensor on_device = x.To(Device::kCuda);
  EXPECT_THROW(on_device.data<float>(), Error);
  const Tensor back = on_device.Clone().To(Device::kCpu);
  EXPECT_EQ(back.data<float>()[4], 1.5f);
  EXPECT_EQ(m.Forward(x, false).To(Device::kCpu).shape(), (Shape{2, 4}));
}

}  // namespace host_twin_test
}  // namespace shardflow
