#include "core/cpu/cpu_backend.hpp"

#include <type_traits>

#include "core/cpu/gemm.hpp"
#include "core/cpu/kernels.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cpu/winograd.hpp"

namespace shardflow::cpu {
namespace {

template <typename T>
class Cpu final : public Backend<T> {
 public:
  Device device() const override { return Device::kCpu; }
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
            int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) override {
    cpu::Gemm<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) override {
    cpu::Im2Col(g, batch, x, cols);
  }
  void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) override {
    cpu::Col2ImAdd(g, batch, cols, dx);
  }
  // Winograd where it applies (core/cpu/winograd.hpp), else oneDNN where it is faster
  // (core/cpu/onednn_conv.hpp); float only.
  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* w,
                   const T* bias, T* y) override {
    if constexpr (std::is_same_v<T, float>) {
      if (WinogradTakes(g, f, batch)) {
        WinogradConvForward(g, f, batch, x, w, bias, y);
        return true;
      }
      return LibraryConvForward(g, f, batch, x, w, bias, y);
    }
    return false;
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const T* dy, const T* w,
                        T* dx) override {
    if constexpr (std::is_same_v<T, float>) {
      if (WinogradTakes(g, f, batch)) {
        WinogradConvBackwardData(g, f, batch, dy, w, dx);
        return true;
      }
      return LibraryConvBackwardData(g, f, batch, dy, w, dx);
    }
    return false;
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* dy,
                          T* dw) override {
    if constexpr (std::is_same_v<T, float>) {
      if (WinogradTakes(g, f, batch)) {
        WinogradConvBackwardFilter(g, f, batch, x, dy, dw);
        return true;
      }
      return LibraryConvBackwardFilter(g, f, batch, x, dy, dw);
    }
    return false;
  }
  void Fill(int64_t n, T value, T* y) override { cpu::Fill(n, value, y); }
  void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) override {
    cpu::BroadcastRows(rows, cols, row, y);
  }
  void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) override {
    cpu::AddRows(rows, cols, x, ldx, y);
  }
  void Transpose(int64_t rows, int64_t cols, const T* x, T* y) override {
    cpu::Transpose(rows, cols, x, y);
  }
  void Add(int64_t n, const T* a, const T* b, T* y) override { cpu::Add(n, a, b, y); }
  void Mul(int64_t n, const T* a, const T* b, T* y) override { cpu::Mul(n, a, b, y); }
  void Scale(int64_t n, T s, T* y) override { cpu::Scale(n, s, y); }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    cpu::Activation(kind, n, x, y);
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    cpu::ActivationGrad(kind, n, x, y, dy, dx);
  }
  void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) override {
    cpu::Repeat(b, times, h, x, y);
  }
  void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) override {
    cpu::RepeatGrad(b, times, h, dy, dx);
  }
  void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) override {
    cpu::AddColumnSums(rows, cols, x, sums);
  }
  double SumSquares(int64_t n, const T* x) override { return cpu::SumSquares(n, x); }
  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    cpu::Pool2D(g, max, batch, x, y);
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    cpu::Pool2DGrad(g, max, relu, batch, x, y, dy, dx);
  }
  void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) override {
    cpu::GlobalAvgPool(b, p, c, x, y);
  }
  void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) override {
    cpu::GlobalAvgPoolGrad(b, p, c, dy, dx);
  }
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    cpu::BatchNorm(p, x, gamma, beta, moving_mean, moving_var, saved, y);
    return kBatchNormSavedByKernels;
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    cpu::BatchNormGrad(p, dy, x, gamma, saved, dgamma, dbeta, dx);
  }
  void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                bool has_prev) override {
    cpu::LstmCell(batch, h, z, ldz, c, hs, ldc, has_prev);
  }
  void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                    bool has_prev, const T* dh, T* dc, T* dz) override {
    cpu::LstmCellGrad(batch, h, z, ldz, c, ldc, has_prev, dh, dc, dz);
  }
  void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                   T* mask, T* y) override {
    cpu::DropoutMask(n, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) override {
    cpu::FillNormal(n, stddev, seed, stream, w);
  }
  void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) override {
    cpu::FillUniform(n, limit, seed, stream, w);
  }
  void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                        const T* x, T* mask, T* y) override {
    cpu::DropoutMaskSlice(s, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                       T* w) override {
    cpu::FillNormalSlice(s, stddev, seed, stream, w);
  }
  void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                        T* w) override {
    cpu::FillUniformSlice(s, limit, seed, stream, w);
  }
  void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) override {
    cpu::SgdUpdate(p, n, w, g, v);
  }
  void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) override {
    cpu::AdamUpdate(p, n, w, g, m, v);
  }
  double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                             T* d) override {
    return cpu::SoftmaxCrossEntropy(b, k, z, labels, d);
  }
  double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) override {
    return cpu::MeanSquaredError(n, y, target, d);
  }
};

}  // namespace

template <typename T>
Backend<T>& CpuBackend() {
  static Cpu<T> backend;
  return backend;
}
template Backend<float>& CpuBackend<float>();
template Backend<double>& CpuBackend<double>();

const DeviceRuntime& CpuRuntime() {
  static const DeviceRuntime runtime{.device = Device::kCpu,
                                     .name = "cpu",
                                     .f32 = &CpuBackend<float>(),
                                     .f64 = &CpuBackend<double>(),
                                     .features = static_cast<uint32_t>(DeviceFeature::kHostMemory)};
  return runtime;
}

}  // namespace shardflow::cpu
