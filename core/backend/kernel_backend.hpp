// KernelBackend<T, Exec>: shardflow::Backend written once as index kernels (core/backend/kernels)
// and run by an executor. It is the CUDA backend with Exec = the device executor
// (core/cuda/device_exec.cuh: one GPU thread per index, cuBLAS GEMM, stream-ordered scratch) and
// its host twin with Exec = HostExec (core/backend/host_twin.hpp: a loop over the indices). The
// twin runs in every CI run: it tests, against the CPU backend, each op's decomposition into
// kernels, their indexing and their arithmetic; only the launch code and cuBLAS are left for a
// GPU run.
//
// An executor provides:
//   template <class K> void Run(int64_t n, const K& k);   // k(i) for every i in [0, n)
//   void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
//             int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);
//   void* Allocate(size_t bytes); void Release(void* p);   // scratch on the device
//   void CopyToHost(void* dst, const void* src, size_t bytes);  // waits for the kernels before
//   Device device() const;
// Thread-safety: as the executor's (one kernel call at a time per executor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.hpp"
#include "core/backend/kernels/elementwise.hpp"
#include "core/backend/kernels/random_fill.hpp"
#include "core/backend/kernels/reductions.hpp"
#include "core/backend/kernels/spatial.hpp"
#include "core/backend/kernels/updates.hpp"
#include "core/error.hpp"

namespace shardflow {

// Scratch memory of n elements of U on an executor's device, released at scope exit.
template <typename Exec, typename U>
class DeviceScratch {
 public:
  DeviceScratch(Exec& exec, int64_t n)
      : exec_(exec),
        p_(static_cast<U*>(n > 0 ? exec.Allocate(static_cast<size_t>(n) * sizeof(U)) : nullptr)),
        n_(n) {}
  ~DeviceScratch() {
    if (p_ != nullptr) exec_.Release(p_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  U* get() const { return p_; }
  // The whole buffer on the host.
  std::vector<U> ToHost() const {
    std::vector<U> out(static_cast<size_t>(n_));
    if (n_ > 0) exec_.CopyToHost(out.data(), p_, out.size() * sizeof(U));
    return out;
  }

 private:
  Exec& exec_;
  U* p_;
  int64_t n_;
};

template <typename T, typename Exec>
class KernelBackend : public Backend<T> {
 public:
  explicit KernelBackend(Exec& exec) : exec_(exec) {}
  Device device() const override { return exec_.device(); }

  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
            int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) override {
    exec_.Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) override {
    exec_.Run(batch * g.oh * g.ow * g.kh * g.kw * g.c, kernels::Im2ColK<T>{g, x, cols});
  }
  void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) override {
    exec_.Run(batch * g.h * g.w * g.c, kernels::Col2ImAddK<T>{g, cols, dx});
  }

  void Fill(int64_t n, T value, T* y) override { exec_.Run(n, kernels::FillK<T>{value, y}); }
  void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) override {
    exec_.Run(rows * cols, kernels::BroadcastRowsK<T>{cols, row, y});
  }
  void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) override {
    exec_.Run(rows * cols, kernels::AddRowsK<T>{cols, ldx, x, y});
  }
  void Transpose(int64_t rows, int64_t cols, const T* x, T* y) override {
    exec_.Run(rows * cols, kernels::TransposeK<T>{rows, cols, x, y});
  }
  void Add(int64_t n, const T* a, const T* b, T* y) override {
    exec_.Run(n, kernels::BinaryK<T>{false, a, b, y});
  }
  void Mul(int64_t n, const T* a, const T* b, T* y) override {
    exec_.Run(n, kernels::BinaryK<T>{true, a, b, y});
  }
  void Scale(int64_t n, T s, T* y) override { exec_.Run(n, kernels::ScaleK<T>{s, y}); }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    exec_.Run(n, kernels::ActivationK<T>{kind, x, y});
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    exec_.Run(n, kernels::ActivationGradK<T>{kind, x, y, dy, dx});
  }
  void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) override {
    exec_.Run(b * times * h, kernels::RepeatK<T>{times, h, x, y});
  }
  void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) override {
    exec_.Run(b * h, kernels::RepeatGradK<T>{times, h, dy, dx});
  }

  // One pass when the rows make one block; else every (block, column) sum first, then each
  // column adds its blocks in order (the same bits).
  void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) override {
    const int64_t blocks = kernels::ColumnSumRowBlocks(rows);
    if (blocks <= 1 || cols == 0) {
      exec_.Run(cols, kernels::AddColumnSumsK<T>{rows, cols, x, nullptr, sums});
      return;
    }
    DeviceScratch<Exec, T> partial(exec_, blocks * cols);
    exec_.Run(blocks * cols, kernels::ColumnBlockSumsK<T>{rows, cols, x, partial.get()});
    exec_.Run(cols, kernels::AddColumnSumsK<T>{rows, cols, x, partial.get(), sums});
  }
  double SumSquares(int64_t n, const T* x) override {
    DeviceScratch<Exec, double> partial(exec_, kernels::SumChunks(n));
    exec_.Run(kernels::SumChunks(n), kernels::SumSquaresChunkK<T>{n, x, partial.get()});
    double s = 0.0;
    for (double p : partial.ToHost()) s += p;
    return s;
  }

  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    exec_.Run(batch * g.oh * g.ow * g.c, kernels::Pool2DK<T>{g, max, x, y});
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    exec_.Run(batch * g.h * g.w * g.c, kernels::Pool2DGradK<T>{g, max, relu, x, y, dy, dx});
  }
  void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) override {
    exec_.Run(b * c, kernels::GlobalAvgPoolK<T>{p, c, x, y});
  }
  void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) override {
    exec_.Run(b * p * c, kernels::GlobalAvgPoolGradK<T>{p, c, dy, dx});
  }

  // saved = mean (C) then inv_std (C).
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    double* mean = saved;
    double* inv_std = saved == nullptr ? nullptr : saved + p.c;
    const bool batch = p.training && p.n > 0;
    const int64_t blocks = batch ? kernels::BatchNormRowBlocks(p.n) * p.c : 0;
    DeviceScratch<Exec, double> partial(exec_, blocks);
    if (batch) {  // the block sums, the means, the blocks' squared deviations from them
      exec_.Run(blocks, kernels::BatchNormBlockSumsK<T>{p.n, p.c, x, nullptr, partial.get()});
      exec_.Run(p.c, kernels::BatchNormMeanK{p.n, p.c, partial.get(), mean});
      exec_.Run(blocks, kernels::BatchNormBlockSumsK<T>{p.n, p.c, x, mean, partial.get()});
    }
    exec_.Run(
        p.c, kernels::BatchNormStatsK<T>{p, partial.get(), moving_mean, moving_var, mean, inv_std});
    exec_.Run(p.n * p.c, kernels::BatchNormApplyK<T>{p.c, x, gamma, beta, mean, inv_std, y});
    return kBatchNormSavedByKernels;
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    const double* mean = saved;
    const double* inv_std = saved == nullptr ? nullptr : saved + p.c;
    DeviceScratch<Exec, double> sums(exec_, 2 * p.c);
    double* sum_d = sums.get();
    double* sum_dh = sum_d == nullptr ? nullptr : sum_d + p.c;
    const int64_t blocks = kernels::BatchNormRowBlocks(p.n) * p.c;
    DeviceScratch<Exec, double> partial(exec_, 2 * blocks);
    double* partial_d = partial.get();
    double* partial_dh = partial_d == nullptr ? nullptr : partial_d + blocks;
    exec_.Run(blocks, kernels::BatchNormGradBlockSumsK<T>{p.n, p.c, dy, x, mean, inv_std, partial_d,
                                                          partial_dh});
    exec_.Run(p.c, kernels::BatchNormGradSumsK<T>{p.n, p.c, partial_d, partial_dh, sum_d, sum_dh,
                                                  dgamma, dbeta});
    if (dx == nullptr) return;
    exec_.Run(p.n * p.c,
              kernels::BatchNormGradApplyK<T>{p, dy, x, gamma, mean, inv_std, sum_d, sum_dh, dx});
  }

  void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                bool has_prev) override {
    exec_.Run(batch * h, kernels::LstmCellK<T>{h, ldz, ldc, has_prev, z, c, hs});
  }
  void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                    bool has_prev, const T* dh, T* dc, T* dz) override {
    exec_.Run(batch * h, kernels::LstmCellGradK<T>{h, ldz, ldc, has_prev, z, c, dh, dc, dz});
  }

  void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                   T* mask, T* y) override {
    exec_.Run(n, kernels::DropoutMaskK<T>{{}, rate, scale, seed, stream, x, mask, y});
  }
  void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) override {
    exec_.Run(n, kernels::RandomFillK<T>{{}, true, stddev, seed, stream, w});
  }
  void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) override {
    exec_.Run(n, kernels::RandomFillK<T>{{}, false, limit, seed, stream, w});
  }
  void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                        const T* x, T* mask, T* y) override {
    exec_.Run(s.outer * s.size * s.inner,
              kernels::DropoutMaskK<T>{{true, s}, rate, scale, seed, stream, x, mask, y});
  }
  void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                       T* w) override {
    exec_.Run(s.outer * s.size * s.inner,
              kernels::RandomFillK<T>{{true, s}, true, stddev, seed, stream, w});
  }
  void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                        T* w) override {
    exec_.Run(s.outer * s.size * s.inner,
              kernels::RandomFillK<T>{{true, s}, false, limit, seed, stream, w});
  }

  void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) override {
    exec_.Run(n, kernels::SgdK<T>{static_cast<T>(p.lr), static_cast<T>(p.momentum),
                                  static_cast<T>(p.weight_decay), p.nesterov, w, g, v});
  }
  void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) override {
    const pointwise::AdamConstants<T> c{static_cast<T>(p.b1),   static_cast<T>(p.b2),
                                        static_cast<T>(p.l2),   static_cast<T>(p.shrink),
                                        static_cast<T>(p.step), static_cast<T>(p.eps)};
    exec_.Run(n, kernels::AdamK<T>{c, w, g, m, v});
  }

  double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                             T* d) override {
    DeviceScratch<Exec, double> loss(exec_, b);
    DeviceScratch<Exec, int64_t> seen(exec_, b);
    switch (labels.dtype()) {
      case DType::kUInt8:
        RunCrossEntropy(b, k, z, labels.device_data<uint8_t>(), d, loss.get(), seen.get());
        break;
      case DType::kInt32:
        RunCrossEntropy(b, k, z, labels.device_data<int32_t>(), d, loss.get(), seen.get());
        break;
      case DType::kInt64:
        RunCrossEntropy(b, k, z, labels.device_data<int64_t>(), d, loss.get(), seen.get());
        break;
      default:
        throw Error(
            ErrorCode::kInvalidArgument,
            std::string("labels must be an integer tensor, got ") + DTypeName(labels.dtype()));
    }
    const std::vector<int64_t> label = seen.ToHost();
    for (int64_t i = 0; i < b; ++i) {
      if (label[i] < 0 || label[i] >= k) ThrowLabelOutOfRange(label[i], i, k);
    }
    double total = 0.0;
    for (double l : loss.ToHost()) total += l;  // rows in order, as the CPU
    return b == 0 ? 0.0 : total / static_cast<double>(b);
  }
  double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) override {
    DeviceScratch<Exec, double> partial(exec_, kernels::SumChunks(n));
    exec_.Run(kernels::SumChunks(n),
              kernels::SquaredErrorChunkK<T>{n, y, target, d, partial.get()});
    double s = 0.0;
    for (double p : partial.ToHost()) s += p;
    return n == 0 ? 0.0 : s / static_cast<double>(n);
  }

 private:
  template <typename L>
  void RunCrossEntropy(int64_t b, int64_t k, const T* z, const L* labels, T* d, double* loss,
                       int64_t* seen) {
    exec_.Run(b, kernels::SoftmaxCrossEntropyRowK<T, L>{b, k, z, labels, d, loss, seen});
  }

  Exec& exec_;
};

}  // namespace shardflow
