// The CPU kernels behind CpuBackend (core/cpu/cpu_backend.hpp), apart from GEMM and im2col,
// which have their own headers. Each is a plain loop over raw pointers with the shape written
// above it in the .cpp; the per-element math comes from core/backend/pointwise.hpp so that a
// device backend can share it. Semantics of every kernel: see the same-named op of
// shardflow::Backend (core/backend/backend.hpp).
// Files: elementwise.cpp (element-wise, repeat), reductions.cpp (column sums, sums of squares,
// batch norm, losses), pooling.cpp, recurrent.cpp (LSTM cell), random_fill.cpp,
// optimizer_updates.cpp. Instantiated for float and double.
// Thread-safety: pure functions of their arguments; callers keep outputs unshared.
#pragma once

#include <cstdint>

#include "core/backend/backend.hpp"

namespace shardflow::cpu {

template <typename T>
void Fill(int64_t n, T value, T* y);
template <typename T>
void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y);
template <typename T>
void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y);
template <typename T>
void Transpose(int64_t rows, int64_t cols, const T* x, T* y);
template <typename T>
void Add(int64_t n, const T* a, const T* b, T* y);
template <typename T>
void Mul(int64_t n, const T* a, const T* b, T* y);
template <typename T>
void Scale(int64_t n, T s, T* y);
template <typename T>
void Activation(ActivationKind kind, int64_t n, const T* x, T* y);
template <typename T>
void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy, T* dx);
template <typename T>
void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y);
template <typename T>
void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx);

template <typename T>
void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums);  // in row blocks
template <typename T>
double SumSquares(int64_t n, const T* x);
template <typename T>
void BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
               T* moving_var, double* saved, T* y);
template <typename T>
void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                   const double* saved, T* dgamma, T* dbeta, T* dx);
template <typename T>
double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels, T* d);
template <typename T>
double MeanSquaredError(int64_t n, const T* y, const T* target, T* d);

template <typename T>
void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y);
template <typename T>
void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                const T* dy, T* dx);
template <typename T>
void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y);
template <typename T>
void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx);

template <typename T>
void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc, bool has_prev);
template <typename T>
void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                  bool has_prev, const T* dh, T* dc, T* dz);

template <typename T>
void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                 T* mask, T* y);
template <typename T>
void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w);
template <typename T>
void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w);
// The same for a slice (SliceIndex, core/backend/backend.hpp) of a tensor: each element draws
// the counter of its index in the whole tensor, so a slice holds exactly the whole tensor's
// values at its indices.
template <typename T>
void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                      const T* x, T* mask, T* y);
template <typename T>
void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream, T* w);
template <typename T>
void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream, T* w);

template <typename T>
void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v);
template <typename T>
void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v);

}  // namespace shardflow::cpu
