// Element-wise CPU kernels: fills, broadcasts, sums, activations, repeat. Flat loops over
// contiguous arrays that the compiler vectorises; one switch per call, outside the loop.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/backend/pointwise.hpp"
#include "core/cpu/kernels.hpp"
#include "core/cpu/parallel.hpp"
#include "core/cpu/vector_math.hpp"

namespace shardflow::cpu {

template <typename T>
void Fill(int64_t n, T value, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

// y (rows, cols): y[r, j] = row[j].
template <typename T>
void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = row[j];
}

// y (cols, rows) = x (rows, cols) transposed, in 32 x 32 blocks (both sides' cache lines used
// whole).
template <typename T>
void Transpose(int64_t rows, int64_t cols, const T* x, T* y) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t c = c0; c < std::min(c0 + kBlock, cols); ++c)
        for (int64_t r = r0; r < std::min(r0 + kBlock, rows); ++r)
          y[c * rows + r] = x[r * cols + c];
}

// y (rows, cols) += x (rows, cols; row stride ldx).
template <typename T>
void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] += x[r * ldx + j];
}

namespace {
// Element-wise passes split over the intra-op threads above this many elements (each element
// computed alone, so results do not depend on the split).
constexpr int64_t kElementwiseGrain = int64_t{1} << 15;
}  // namespace

template <typename T>
void Add(int64_t n, const T* a, const T* b, T* y) {
  ParallelFor(n, kElementwiseGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] = a[i] + b[i];
  });
}

template <typename T>
void Mul(int64_t n, const T* a, const T* b, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

template <typename T>
void Scale(int64_t n, T s, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

namespace {

// Float GELU through the vectorised tanh (core/cpu/vector_math.hpp), in chunks on the stack:
// y = 0.5 x (1 + t), or with dy the gradient, t = tanh(s (x + c x^3)).
void GeluFloat(int64_t n, const float* x, const float* dy, float* out) {
  constexpr int64_t kChunk = 256;
  constexpr float s = pointwise::kGeluScale<float>, c = pointwise::kGeluCubic<float>;
  float t[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = std::min(kChunk, n - b);
    const float* xb = x + b;
    for (int64_t i = 0; i < m; ++i) t[i] = s * (xb[i] + c * xb[i] * xb[i] * xb[i]);
    TanhFloat(m, t, t);
    if (dy == nullptr) {
      for (int64_t i = 0; i < m; ++i) out[b + i] = 0.5f * xb[i] * (1.0f + t[i]);
      continue;
    }
    for (int64_t i = 0; i < m; ++i) {
      const float v = xb[i];
      out[b + i] = dy[b + i] * (0.5f * (1.0f + t[i]) +
                                0.5f * v * (1.0f - t[i] * t[i]) * s * (1.0f + 3.0f * c * v * v));
    }
  }
}

template <typename T>
void ActivationRange(ActivationKind kind, int64_t n, const T* x, T* y) {
  switch (kind) {
    case ActivationKind::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = pointwise::Relu(x[i]);
      break;
    case ActivationKind::kGelu:
      if constexpr (std::is_same_v<T, float>) {
        GeluFloat(n, x, nullptr, y);
      } else {
        for (int64_t i = 0; i < n; ++i) y[i] = pointwise::Gelu(x[i]);
      }
      break;
    case ActivationKind::kTanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      break;
    case ActivationKind::kSigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = pointwise::Sigmoid(x[i]);
      break;
  }
}

template <typename T>
void ActivationGradRange(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                         T* dx) {
  switch (kind) {
    case ActivationKind::kRelu:
      for (int64_t i = 0; i < n; ++i) dx[i] = pointwise::ReluGrad(x[i], dy[i]);
      break;
    case ActivationKind::kGelu:
      if constexpr (std::is_same_v<T, float>) {
        GeluFloat(n, x, dy, dx);
      } else {
        for (int64_t i = 0; i < n; ++i) dx[i] = pointwise::GeluGrad(x[i], dy[i]);
      }
      break;
    case ActivationKind::kTanh:
      for (int64_t i = 0; i < n; ++i) dx[i] = pointwise::TanhGradFromY(y[i], dy[i]);
      break;
    case ActivationKind::kSigmoid:
      for (int64_t i = 0; i < n; ++i) dx[i] = pointwise::SigmoidGradFromY(y[i], dy[i]);
      break;
  }
}

}  // namespace

// x and y (n) flat.
template <typename T>
void Activation(ActivationKind kind, int64_t n, const T* x, T* y) {
  ParallelFor(n, kElementwiseGrain,
              [&](int64_t b, int64_t e) { ActivationRange(kind, e - b, x + b, y + b); });
}

// ReLU and GELU differentiate through x, tanh and sigmoid through y.
template <typename T>
void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy, T* dx) {
  ParallelFor(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    ActivationGradRange(kind, e - b, x + b, y + b, dy + b, dx + b);
  });
}

// x (B, H) -> y (B, times, H).
template <typename T>
void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) {
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < times; ++t)
      std::memcpy(y + (i * times + t) * h, x + i * h, static_cast<size_t>(h) * sizeof(T));
}

// dy (B, times, H) -> dx (B, H), summed over times.
template <typename T>
void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) {
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < h; ++j) dx[i * h + j] = T(0);
    for (int64_t t = 0; t < times; ++t)
      for (int64_t j = 0; j < h; ++j) dx[i * h + j] += dy[(i * times + t) * h + j];
  }
}

#define SF_INSTANTIATE(T)                                                                     \
  template void Fill<T>(int64_t, T, T*);                                                      \
  template void BroadcastRows<T>(int64_t, int64_t, const T*, T*);                             \
  template void AddRows<T>(int64_t, int64_t, const T*, int64_t, T*);                          \
  template void Transpose<T>(int64_t, int64_t, const T*, T*);                                 \
  template void Add<T>(int64_t, const T*, const T*, T*);                                      \
  template void Mul<T>(int64_t, const T*, const T*, T*);                                      \
  template void Scale<T>(int64_t, T, T*);                                                     \
  template void Activation<T>(ActivationKind, int64_t, const T*, T*);                         \
  template void ActivationGrad<T>(ActivationKind, int64_t, const T*, const T*, const T*, T*); \
  template void Repeat<T>(int64_t, int64_t, int64_t, const T*, T*);                           \
  template void RepeatGrad<T>(int64_t, int64_t, int64_t, const T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
