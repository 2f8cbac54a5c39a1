// Index kernels of the element-wise ops, the repeat op and a plain GEMM, shared by the CUDA
// backend and its host twin (core/backend/kernel_backend.hpp).
//
// An index kernel is a small struct of pointers and sizes with `operator()(int64_t i)`: the work
// of index i of an index space whose size the caller gives to Exec::Run. The CUDA backend runs
// one GPU thread per index; the host twin runs a loop over i. Each index writes only its own
// outputs, so the order in which indices run does not change any result, and the arithmetic is
// the same code on both sides (SF_HOST_DEVICE). Shapes follow the same-named ops of
// shardflow::Backend (core/backend/backend.hpp).
// Thread-safety: kernels are values; distinct indices touch distinct outputs.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/backend/host_device.hpp"
#include "core/backend/pointwise.hpp"

namespace shardflow::kernels {

// y (n) = value. Index: element.
template <typename T>
struct FillK {
  T value;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] = value; }
};

// y (rows, cols): every row = row. Index: element of y.
template <typename T>
struct BroadcastRowsK {
  int64_t cols;
  const T* row;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] = row[i % cols]; }
};

// y (cols, rows) = x (rows, cols) transposed. Index: element of y.
template <typename T>
struct TransposeK {
  int64_t rows, cols;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] = x[(i % rows) * cols + i / rows]; }
};

// y (cols, rows) += x (rows, cols) transposed. Index: element of y.
template <typename T>
struct TransposeAddK {
  int64_t rows, cols;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] += x[(i % rows) * cols + i / rows]; }
};

// y (rows, cols) += x (rows, cols; row stride ldx). Index: element of y.
template <typename T>
struct AddRowsK {
  int64_t cols, ldx;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] += x[(i / cols) * ldx + i % cols]; }
};

// y = a + b (mul = false) or a * b (mul = true). Index: element.
template <typename T>
struct BinaryK {
  bool mul;
  const T* a;
  const T* b;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] = mul ? a[i] * b[i] : a[i] + b[i]; }
};

// y *= s. Index: element.
template <typename T>
struct ScaleK {
  T s;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] *= s; }
};

// y = act(x). Index: element. The kind is uniform over the launch, so the branch does not
// diverge on a GPU.
template <typename T>
struct ActivationK {
  ActivationKind kind;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    switch (kind) {
      case ActivationKind::kRelu:
        y[i] = pointwise::Relu(x[i]);
        break;
      case ActivationKind::kGelu:
        y[i] = pointwise::Gelu(x[i]);
        break;
      case ActivationKind::kTanh:
        y[i] = std::tanh(x[i]);
        break;
      case ActivationKind::kSigmoid:
        y[i] = pointwise::Sigmoid(x[i]);
        break;
    }
  }
};

// dx from x (ReLU, GELU) or y (tanh, sigmoid) and dy. Index: element.
template <typename T>
struct ActivationGradK {
  ActivationKind kind;
  const T* x;
  const T* y;
  const T* dy;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    switch (kind) {
      case ActivationKind::kRelu:
        dx[i] = pointwise::ReluGrad(x[i], dy[i]);
        break;
      case ActivationKind::kGelu:
        dx[i] = pointwise::GeluGrad(x[i], dy[i]);
        break;
      case ActivationKind::kTanh:
        dx[i] = pointwise::TanhGradFromY(y[i], dy[i]);
        break;
      case ActivationKind::kSigmoid:
        dx[i] = pointwise::SigmoidGradFromY(y[i], dy[i]);
        break;
    }
  }
};

// x (B, H) -> y (B, times, H). Index: element of y.
template <typename T>
struct RepeatK {
  int64_t times, h;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const { y[i] = x[(i / (times * h)) * h + i % h]; }
};

// dx (B, H) = sum over t of dy (B, times, H), t ascending. Index: element of dx.
template <typename T>
struct RepeatGradK {
  int64_t times, h;
  const T* dy;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / h, j = i % h;
    T acc = T(0);
    for (int64_t t = 0; t < times; ++t) acc += dy[(b * times + t) * h + j];
    dx[i] = acc;
  }
};

// C (M, N) = alpha op(A) op(B) + beta C, one output element per index (row-major, leading
// dimensions as cpu::Gemm). beta = 0 does not read C, so C may hold garbage. The host twin's
// GEMM; the CUDA backend uses cuBLAS instead.
template <typename T>
struct GemmK {
  bool trans_a, trans_b;
  int64_t n, k;
  T alpha;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  T beta;
  T* c;
  int64_t ldc;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t i = idx / n, j = idx % n;
    T acc = T(0);
    for (int64_t p = 0; p < k; ++p) {
      const T av = trans_a ? a[p * lda + i] : a[i * lda + p];
      const T bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
      acc += av * bv;
    }
    T* out = c + i * ldc + j;
    *out = beta == T(0) ? alpha * acc : alpha * acc + beta * *out;
  }
};

}  // namespace shardflow::kernels
