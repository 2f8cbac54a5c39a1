// What of the cuDNN convolution path runs without a GPU (core/cuda/cudnn_conv.hpp):
//  - every plan over a sweep of shapes is one cuDNN's own descriptors agree with: the output
//    size they compute is ours, in float and double;
//  - the data movement around the library call: the input padded at the bottom and right, the
//    kernel in cuDNN's (F, KH, KW, C) layout, the input gradient cropped back and the kernel
//    gradient transposed back and added. A symmetric-padding convolution on the plan's shapes
//    (the host twin's im2col + GEMM standing in for cuDNN) must give our convolution's bits.
// cuDNN's arithmetic itself is tested on a GPU (tests/cuda/cudnn_conv_gpu_test.cpp, label gpu).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/backend/kernels/spatial.hpp"
#include "core/cpu/im2col.hpp"
#include "core/cuda/cudnn_conv.hpp"
#include "core/random.hpp"

namespace shardflow::cuda {
namespace {

TEST(CudnnPlanTest, EveryPlanOfASweepIsOneCudnnAgreesWith) {
  int plans = 0, padded = 0;
  for (int64_t h : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 28})
    for (int64_t w : {1, 4, 5, 8})
      for (int64_t kh = 1; kh <= 5; ++kh)
        for (int64_t kw : {1, 2, 3, 5})
          for (int64_t stride = 1; stride <= 3; ++stride)
            for (bool same : {true, false}) {
              if (!same && (kh > h || kw > w)) continue;
              const ConvGeometry g = MakeConvGeometry(h, w, 3, kh, kw, stride, same);
              const CudnnConvShape s = PlanCudnnConv(g, 4, 2);
              const std::string where = "h " + std::to_string(h) + " w " + std::to_string(w) +
                                        " k " + std::to_string(kh) + "x" + std::to_string(kw) +
                                        " s " + std::to_string(stride) +
                                        (same ? " same" : " valid");
              ASSERT_TRUE(s.usable) << where << ": " << s.why;
              EXPECT_EQ(s.h, g.h + s.eh) << where;
              EXPECT_EQ(s.w, g.w + s.ew) << where;
              EXPECT_LE(s.eh, 1) << where;  // TensorFlow's split is off by one row at most
              EXPECT_LE(s.ew, 1) << where;
              const std::array<int, 4> want{2, 4, static_cast<int>(g.oh), static_cast<int>(g.ow)};
              EXPECT_EQ(CudnnOutputDims(s, false), want) << where;
              EXPECT_EQ(CudnnOutputDims(s, true), want) << where;
              ++plans;
              padded += s.eh + s.ew > 0 ? 1 : 0;
            }
  EXPECT_EQ(plans, 4260);
  EXPECT_GT(padded, 100);  // the sweep exercises the lopsided padding
}

// cuDNN's legacy descriptors refuse a tensor of more than INT_MAX elements: such a plan is not
// usable (the layer stays on im2col), and the largest usable one is accepted by cuDNN.
TEST(CudnnPlanTest, TensorsBeyondCudnnsIntRangeAreLeftToTheLayer) {
  const ConvGeometry g = MakeConvGeometry(224, 224, 64, 3, 3, 1, true);
  const CudnnConvShape big = PlanCudnnConv(g, 64, 1024);
  EXPECT_FALSE(big.usable);
  EXPECT_EQ(big.why, "a tensor beyond cuDNN's int range");
  const CudnnConvShape fits = PlanCudnnConv(g, 64, 256);
  ASSERT_TRUE(fits.usable) << fits.why;
  const std::array<int, 4> want{256, 64, 224, 224};
  EXPECT_EQ(CudnnOutputDims(fits, false), want);
}

TEST(CudnnPlanTest, EmptyBatchesAreLeftToTheLayer) {
  const ConvGeometry g = MakeConvGeometry(5, 5, 3, 3, 3, 1, true);
  EXPECT_FALSE(PlanCudnnConv(g, 4, 0).usable);
  EXPECT_FALSE(PlanCudnnConv(g, 0, 2).usable);
}

// The host twin's executor and its im2col, GEMM and col2im kernels.
struct Twin {
  HostExec exec;
  std::vector<float> Conv(const ConvGeometry& g, int64_t b, int64_t f, const std::vector<float>& x,
                          const std::vector<float>& w) {
    const int64_t rows = b * g.oh * g.ow, kkc = g.kh * g.kw * g.c;
    std::vector<float> cols(static_cast<size_t>(rows * kkc)), y(static_cast<size_t>(rows * f));
    exec.Run(rows * kkc, kernels::Im2ColK<float>{g, x.data(), cols.data()});
    exec.Gemm(false, false, rows, f, kkc, 1.0f, cols.data(), kkc, w.data(), f, 0.0f, y.data(), f);
    return y;
  }
  std::vector<float> Cols(const ConvGeometry& g, int64_t b, const std::vector<float>& x) {
    const int64_t rows = b * g.oh * g.ow, kkc = g.kh * g.kw * g.c;
    std::vector<float> cols(static_cast<size_t>(rows * kkc));
    exec.Run(rows * kkc, kernels::Im2ColK<float>{g, x.data(), cols.data()});
    return cols;
  }
};

std::vector<float> Seeded(int64_t n, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(RandomNormal(11, stream, i));
  return v;
}

// The geometry the library sees: the plan's padded input, symmetric padding, our output size.
ConvGeometry LibraryView(const ConvGeometry& g, const CudnnConvShape& s) {
  ConvGeometry p = g;
  p.h = s.h;
  p.w = s.w;
  p.pad_top = s.pad_h;
  p.pad_left = s.pad_w;
  return p;
}

TEST(CudnnPlanTest, PaddingLayoutAndCropReproduceOurConvolutionBitForBit) {
  struct Case {
    int64_t h, w, c, k, stride, f, batch;
    bool same;
  };
  const Case cases[] = {{7, 6, 3, 2, 1, 5, 2, true}, {8, 8, 4, 3, 2, 3, 3, true},
                        {9, 4, 2, 4, 3, 2, 1, true}, {10, 7, 3, 3, 2, 4, 2, false},
                        {6, 6, 3, 3, 1, 2, 2, true}, {28, 28, 1, 3, 2, 2, 1, true}};
  Twin t;
  for (const Case& c : cases) {
    const ConvGeometry g = MakeConvGeometry(c.h, c.w, c.c, c.k, c.k, c.stride, c.same);
    const CudnnConvShape s = PlanCudnnConv(g, c.f, c.batch);
    ASSERT_TRUE(s.usable) << s.why;
    const ConvGeometry lib = LibraryView(g, s);
    const int64_t kkc = g.kh * g.kw * g.c, rows = c.batch * g.oh * g.ow;
    const std::vector<float> x = Seeded(c.batch * g.h * g.w * g.c, 1), w = Seeded(kkc * c.f, 2);
    const std::vector<float> dy = Seeded(rows * c.f, 3), dw0 = Seeded(kkc * c.f, 4);
    const std::string where =
        "h " + std::to_string(c.h) + " k " + std::to_string(c.k) + " s " + std::to_string(c.stride);

    // Forward: the padded input through the library's view; the kernel goes over as (F, KKC).
    std::vector<float> xp(static_cast<size_t>(c.batch) * s.h * s.w * s.c);
    t.exec.Run(static_cast<int64_t>(xp.size()),
               kernels::PadBottomRightK<float>{g.h, g.w, g.c, s.eh, s.ew, x.data(), xp.data()});
    std::vector<float> wt(w.size());
    t.exec.Run(kkc * c.f, kernels::TransposeK<float>{kkc, c.f, w.data(), wt.data()});
    for (int64_t fi = 0; fi < c.f; ++fi)  // (F, KH, KW, C): the filter layout cuDNN is told
      for (int64_t q = 0; q < kkc; ++q) ASSERT_EQ(wt[fi * kkc + q], w[q * c.f + fi]);
    EXPECT_EQ(t.Conv(lib, c.batch, c.f, xp, w), t.Conv(g, c.batch, c.f, x, w)) << where;

    // Input gradient: col2im on the padded shape, then the top-left crop.
    std::vector<float> dcols(static_cast<size_t>(rows * kkc));
    t.exec.Gemm(false, true, rows, kkc, c.f, 1.0f, dy.data(), c.f, w.data(), c.f, 0.0f,
                dcols.data(), kkc);
    std::vector<float> dx(x.size(), 0.0f), dxp(xp.size(), 0.0f), dx_lib(x.size(), -1.0f);
    t.exec.Run(static_cast<int64_t>(dx.size()),
               kernels::Col2ImAddK<float>{g, dcols.data(), dx.data()});
    t.exec.Run(static_cast<int64_t>(dxp.size()),
               kernels::Col2ImAddK<float>{lib, dcols.data(), dxp.data()});
    t.exec.Run(static_cast<int64_t>(dx.size()),
               kernels::CropTopLeftK<float>{g.h, g.w, g.c, s.eh, s.ew, dxp.data(), dx_lib.data()});
    EXPECT_EQ(dx_lib, dx) << where;

    // Kernel gradient: the library's (F, KKC) = dy^T cols(padded), transposed and added into dw.
    const std::vector<float> cols = t.Cols(g, c.batch, x), cols_p = t.Cols(lib, c.batch, xp);
    std::vector<float> dw_ours(w.size()), dw_f(w.size()), dw_lib = dw0;
    t.exec.Gemm(true, false, kkc, c.f, rows, 1.0f, cols.data(), kkc, dy.data(), c.f, 0.0f,
                dw_ours.data(), c.f);
    for (size_t i = 0; i < dw_ours.size(); ++i) dw_ours[i] += dw0[i];
    t.exec.Gemm(true, false, c.f, kkc, rows, 1.0f, dy.data(), c.f, cols_p.data(), kkc, 0.0f,
                dw_f.data(), kkc);
    t.exec.Run(kkc * c.f, kernels::TransposeAddK<float>{c.f, kkc, dw_f.data(), dw_lib.data()});
    EXPECT_EQ(dw_lib, dw_ours) << where;
  }
}

// The GPU's convolution switch is its own (SHARDFLOW_CUDNN_CONV), not the CPU's SHARDFLOW_CONV.
TEST(CudnnPlanTest, TheConvolutionSwitchIsTheGpusOwn) {
  EXPECT_TRUE(ParseCudnnConv(nullptr));
  EXPECT_TRUE(ParseCudnnConv("on"));
  EXPECT_FALSE(ParseCudnnConv("off"));
  for (const char* bad : {"own", "ON", "1"}) {
    try {
      ParseCudnnConv(bad);
      FAIL() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("SHARDFLOW_CUDNN_CONV '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  SetCudnnConv(false);
  EXPECT_FALSE(CudnnConvOn());
  SetCudnnConv(true);
  EXPECT_TRUE(CudnnConvOn());
}

}  // namespace
}  // namespace shardflow::cuda
