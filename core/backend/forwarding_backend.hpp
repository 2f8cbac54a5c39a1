// ForwardingBackend: a Backend<T> that hands every op to another backend, for backends that
// change a few ops of a device's own and keep the rest (a precision, core/precision/, overrides
// the matrix products). A new op in Backend<T> must be added here once; every decorator then
// forwards it.
// Thread-safety: as the wrapped backend's.
#pragma once

#include <memory>

#include "core/backend/backend.hpp"

namespace shardflow {

template <typename T>
class ForwardingBackend : public Backend<T> {
 public:
  // `base` must outlive this backend.
  explicit ForwardingBackend(Backend<T>& base) : base_(base) {}
  Backend<T>& base() const { return base_; }

  Device device() const override { return base_.device(); }
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
            int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) override {
    base_.Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) override {
    base_.Im2Col(g, batch, x, cols);
  }
  void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) override {
    base_.Col2ImAdd(g, batch, cols, dx);
  }
  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* w,
                   const T* bias, T* y) override {
    return base_.ConvForward(g, f, batch, x, w, bias, y);
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const T* dy, const T* w,
                        T* dx) override {
    return base_.ConvBackwardData(g, f, batch, dy, w, dx);
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* dy,
                          T* dw) override {
    return base_.ConvBackwardFilter(g, f, batch, x, dy, dw);
  }
  void Fill(int64_t n, T value, T* y) override { base_.Fill(n, value, y); }
  void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) override {
    base_.BroadcastRows(rows, cols, row, y);
  }
  void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) override {
    base_.AddRows(rows, cols, x, ldx, y);
  }
  void Transpose(int64_t rows, int64_t cols, const T* x, T* y) override {
    base_.Transpose(rows, cols, x, y);
  }
  void Add(int64_t n, const T* a, const T* b, T* y) override { base_.Add(n, a, b, y); }
  void Mul(int64_t n, const T* a, const T* b, T* y) override { base_.Mul(n, a, b, y); }
  void Scale(int64_t n, T s, T* y) override { base_.Scale(n, s, y); }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    base_.Activation(kind, n, x, y);
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    base_.ActivationGrad(kind, n, x, y, dy, dx);
  }
  void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) override {
    base_.Repeat(b, times, h, x, y);
  }
  void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) override {
    base_.RepeatGrad(b, times, h, dy, dx);
  }
  void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) override {
    base_.AddColumnSums(rows, cols, x, sums);
  }
  double SumSquares(int64_t n, const T* x) override { return base_.SumSquares(n, x); }
  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    base_.Pool2D(g, max, batch, x, y);
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    base_.Pool2DGrad(g, max, relu, batch, x, y, dy, dx);
  }
  void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) override {
    base_.GlobalAvgPool(b, p, c, x, y);
  }
  void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) override {
    base_.GlobalAvgPoolGrad(b, p, c, dy, dx);
  }
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    return base_.BatchNorm(p, x, gamma, beta, moving_mean, moving_var, saved, y);
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    base_.BatchNormGrad(p, dy, x, gamma, saved, dgamma, dbeta, dx);
  }
  void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                bool has_prev) override {
    base_.LstmCell(batch, h, z, ldz, c, hs, ldc, has_prev);
  }
  void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                    bool has_prev, const T* dh, T* dc, T* dz) override {
    base_.LstmCellGrad(batch, h, z, ldz, c, ldc, has_prev, dh, dc, dz);
  }
  bool LstmForward(const LstmShape& s, bool training, const T* x, const T* kernel,
                   const T* recurrent, const T* bias, T* hs,
                   std::unique_ptr<LstmSaved>* saved) override {
    return base_.LstmForward(s, training, x, kernel, recurrent, bias, hs, saved);
  }
  void LstmBackward(const LstmShape& s, const T* x, const T* hs, const T* dhs, const T* dlast,
                    LstmSaved& saved, T* dkernel, T* drecurrent, T* dbias, T* dx) override {
    base_.LstmBackward(s, x, hs, dhs, dlast, saved, dkernel, drecurrent, dbias, dx);
  }
  void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                   T* mask, T* y) override {
    base_.DropoutMask(n, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) override {
    base_.FillNormal(n, stddev, seed, stream, w);
  }
  void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) override {
    base_.FillUniform(n, limit, seed, stream, w);
  }
  void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                        const T* x, T* mask, T* y) override {
    base_.DropoutMaskSlice(s, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                       T* w) override {
    base_.FillNormalSlice(s, stddev, seed, stream, w);
  }
  void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                        T* w) override {
    base_.FillUniformSlice(s, limit, seed, stream, w);
  }
  void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) override {
    base_.SgdUpdate(p, n, w, g, v);
  }
  void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) override {
    base_.AdamUpdate(p, n, w, g, m, v);
  }
  double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                             T* d) override {
    return base_.SoftmaxCrossEntropy(b, k, z, labels, d);
  }
  double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) override {
    return base_.MeanSquaredError(n, y, target, d);
  }

 private:
  Backend<T>& base_;
};

}  // namespace shardflow
