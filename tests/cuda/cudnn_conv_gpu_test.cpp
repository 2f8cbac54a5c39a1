// GPU-only: the CUDA backend's cuDNN convolution passes against a double reference (the host
// twin's im2col + GEMM kernels in double), on shapes with symmetric and lopsided padding, in
// float (FMA math: TF32 off) and double. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/backend/kernels/spatial.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cuda/cudnn_conv.hpp"
#include "core/random.hpp"
#include "tests/cuda/gpu_reference.hpp"

namespace shardflow::cuda {
namespace {

using testing::As;
using testing::ReferenceError;
class CudnnConvGpu : public testing::GpuTest {};

std::vector<double> Seeded(int64_t n, uint64_t stream) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = RandomNormal(21, stream, i);
  return v;
}

struct Case {
  int64_t h, w, c, k, stride, f, batch;
  bool same;
};

template <typename T>
void CheckPasses(const Case& c, double tol) {
  const ConvGeometry g = MakeConvGeometry(c.h, c.w, c.c, c.k, c.k, c.stride, c.same);
  const int64_t kkc = g.kh * g.kw * g.c, rows = c.batch * g.oh * g.ow;
  const std::vector<double> x = Seeded(c.batch * g.h * g.w * g.c, 1), w = Seeded(kkc * c.f, 2);
  const std::vector<double> bias = Seeded(c.f, 3), dy = Seeded(rows * c.f, 4);
  const std::vector<double> dw0 = Seeded(kkc * c.f, 5);
  // The double reference.
  HostExec host;
  std::vector<double> cols(static_cast<size_t>(rows * kkc)), y_ref(static_cast<size_t>(rows * c.f));
  host.Run(rows * kkc, kernels::Im2ColK<double>{g, x.data(), cols.data()});
  for (int64_t r = 0; r < rows; ++r) std::copy(bias.begin(), bias.end(), y_ref.begin() + r * c.f);
  host.Gemm(false, false, rows, c.f, kkc, 1.0, cols.data(), kkc, w.data(), c.f, 1.0, y_ref.data(),
            c.f);
  std::vector<double> dw_ref = dw0, dcols(cols.size()), dx_ref(x.size(), 0.0);
  host.Gemm(true, false, kkc, c.f, rows, 1.0, cols.data(), kkc, dy.data(), c.f, 1.0, dw_ref.data(),
            c.f);
  host.Gemm(false, true, rows, kkc, c.f, 1.0, dy.data(), c.f, w.data(), c.f, 0.0, dcols.data(),
            kkc);
  host.Run(static_cast<int64_t>(x.size()),
           kernels::Col2ImAddK<double>{g, dcols.data(), dx_ref.data()});
  // The GPU, through the mirror (host buffers copied to the device and back around each pass).
  Backend<T>& gpu = testing::DeviceMirror<T>();
  const std::vector<T> xt = As<T>(x), wt = As<T>(w), bt = As<T>(bias), dyt = As<T>(dy);
  std::vector<T> y(y_ref.size()), dx(x.size(), T(7)), dw = As<T>(dw0);
  const std::string where = "h " + std::to_string(c.h) + " k " + std::to_string(c.k) + " s " +
                            std::to_string(c.stride) + (c.same ? " same" : " valid");
  ASSERT_TRUE(gpu.ConvForward(g, c.f, c.batch, xt.data(), wt.data(), bt.data(), y.data()))
      << where << ": cuDNN did not take the forward pass";
  ASSERT_TRUE(gpu.ConvBackwardData(g, c.f, c.batch, dyt.data(), wt.data(), dx.data())) << where;
  ASSERT_TRUE(gpu.ConvBackwardFilter(g, c.f, c.batch, xt.data(), dyt.data(), dw.data())) << where;
  EXPECT_LE(ReferenceError(y, y_ref), tol) << where << " forward";
  EXPECT_LE(ReferenceError(dx, dx_ref), tol) << where << " input gradient";
  EXPECT_LE(ReferenceError(dw, dw_ref), tol)
      << where << " kernel gradient (added to what was there)";
  // A repeated backward pass gives the same bits (deterministic algorithms only).
  std::vector<T> dw2 = As<T>(dw0);
  ASSERT_TRUE(gpu.ConvBackwardFilter(g, c.f, c.batch, xt.data(), dyt.data(), dw2.data()));
  EXPECT_EQ(dw2, dw) << where;
}

const Case kCases[] = {{28, 28, 1, 5, 1, 32, 16, true}, {14, 14, 32, 5, 1, 64, 16, true},
                       {9, 7, 3, 3, 2, 8, 3, true},     {8, 8, 4, 2, 1, 5, 2, true},
                       {10, 7, 3, 3, 2, 4, 2, false},   {5, 5, 2, 1, 1, 3, 1, true}};

// float: FMA kernels (TF32 off), within the float rounding of sums of up to 800 products.
TEST_F(CudnnConvGpu, FloatPassesMatchADoubleReference) {
  for (const Case& c : kCases) CheckPasses<float>(c, 2e-5);
}

TEST_F(CudnnConvGpu, DoublePassesMatchADoubleReference) {
  for (const Case& c : kCases) CheckPasses<double>(c, 1e-12);
}

// SHARDFLOW_CUDNN_CONV = off keeps the GPU on im2col + cuBLAS; the CPU's choice (SHARDFLOW_CONV)
// does not reach the GPU.
TEST_F(CudnnConvGpu, OwnKernelsLeaveTheLayerOnIm2col) {
  const ConvGeometry g = MakeConvGeometry(6, 6, 2, 3, 3, 1, true);
  std::vector<float> x(2 * 6 * 6 * 2, 1.0f), w(3 * 3 * 2 * 4, 1.0f), y(2 * 6 * 6 * 4);
  SetCudnnConv(false);
  const bool taken =
      testing::DeviceMirror<float>().ConvForward(g, 4, 2, x.data(), w.data(), nullptr, y.data());
  SetCudnnConv(true);
  EXPECT_FALSE(taken);
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  cpu::SetConvKernel(cpu::ConvKernel::kOwn);
  const bool taken_anyway =
      testing::DeviceMirror<float>().ConvForward(g, 4, 2, x.data(), w.data(), nullptr, y.data());
  cpu::SetConvKernel(before);
  EXPECT_TRUE(taken_anyway);
}

}  // namespace
}  // namespace shardflow::cuda
