// Per-element math shared by every backend: activations and their derivatives, the LSTM cell,
// the optimizer updates of one parameter.
//
// Each function computes one element from its operands and nothing else, so a CPU loop (core/cpu)
// and a later CUDA kernel (one thread per element) call the same code and agree to the rounding.
// SF_HOST_DEVICE marks them __host__ __device__ under nvcc and is empty for the host compiler.
// They are inline and branch-free where the CPU loops need to vectorise.
// Thread-safety: pure functions.
#pragma once

#include <cmath>

#include "core/backend/host_device.hpp"

namespace shardflow::pointwise {

// GELU, tanh approximation (as TensorFlow's approximate=True).
template <typename T>
inline constexpr T kGeluScale = T(0.7978845608028654);  // sqrt(2 / pi)
template <typename T>
inline constexpr T kGeluCubic = T(0.044715);

template <typename T>
SF_HOST_DEVICE inline T Relu(T v) {
  return v > T(0) ? v : T(0);
}
template <typename T>
SF_HOST_DEVICE inline T ReluGrad(T x, T dy) {
  return x > T(0) ? dy : T(0);
}
template <typename T>
SF_HOST_DEVICE inline T Gelu(T v) {
  return T(0.5) * v * (T(1) + std::tanh(kGeluScale<T> * (v + kGeluCubic<T> * v * v * v)));
}
// d/dv 0.5 v (1 + t), t = tanh(s (v + c v^3)): 0.5 (1 + t) + 0.5 v (1 - t^2) s (1 + 3 c v^2).
template <typename T>
SF_HOST_DEVICE inline T GeluGrad(T v, T dy) {
  const T t = std::tanh(kGeluScale<T> * (v + kGeluCubic<T> * v * v * v));
  return dy * (T(0.5) * (T(1) + t) +
               T(0.5) * v * (T(1) - t * t) * kGeluScale<T> * (T(1) + T(3) * kGeluCubic<T> * v * v));
}
template <typename T>
SF_HOST_DEVICE inline T Sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}
// Derivatives through the outputs y = tanh(x), y = sigmoid(x).
template <typename T>
SF_HOST_DEVICE inline T TanhGradFromY(T y, T dy) {
  return dy * (T(1) - y * y);
}
template <typename T>
SF_HOST_DEVICE inline T SigmoidGradFromY(T y, T dy) {
  return dy * y * (T(1) - y);
}

// SGD with momentum mu and L2 decay wd on one parameter w, velocity v, gradient g.
//   plain (mu = 0): w -= lr (g + wd w)
//   momentum:       v = mu v + (g + wd w); w -= lr v
//   nesterov:       v = mu v + g';          w -= lr (g' + mu v)
template <typename T>
SF_HOST_DEVICE inline void SgdPlain(T& w, T g, T lr, T wd) {
  w -= lr * (g + wd * w);
}
template <typename T>
SF_HOST_DEVICE inline void SgdMomentum(T& w, T g, T& v, T lr, T mu, T wd) {
  const T vi = mu * v + (g + wd * w);
  v = vi;
  w -= lr * vi;
}
template <typename T>
SF_HOST_DEVICE inline void SgdNesterov(T& w, T g, T& v, T lr, T mu, T wd) {
  const T gi = g + wd * w;
  const T vi = mu * v + gi;
  v = vi;
  w -= lr * (gi + mu * vi);
}

// Adam on one parameter; bias corrections are folded into step and eps by the caller, decoupled
// decay into shrink (1 - lr wd for AdamW, 1 for Adam), L2 decay into l2 (wd for Adam, 0 AdamW).
template <typename T>
struct AdamConstants {
  T b1, b2, l2, shrink, step, eps;
};
template <typename T>
SF_HOST_DEVICE inline void Adam(T& w, T g, T& m, T& v, const AdamConstants<T>& c) {
  const T gi = g + c.l2 * w;
  const T mi = c.b1 * m + (T(1) - c.b1) * gi;
  const T vi = c.b2 * v + (T(1) - c.b2) * gi * gi;
  m = mi;
  v = vi;
  w = w * c.shrink - c.step * mi / (std::sqrt(vi) + c.eps);
}

// LSTM cell, one unit j: pre-activations zi, zf, zg, zo in place become the gates i, f, g, o;
// c = i g + f c_prev (has_prev false: c = i g), h = o tanh(c).
template <typename T>
SF_HOST_DEVICE inline void LstmCell(T& zi, T& zf, T& zg, T& zo, T c_prev, bool has_prev, T& c,
                                    T& h) {
  const T i = Sigmoid(zi), f = Sigmoid(zf);
  const T g = std::tanh(zg), o = Sigmoid(zo);
  zi = i;
  zf = f;
  zg = g;
  zo = o;
  c = i * g + (has_prev ? f * c_prev : T(0));
  h = o * std::tanh(c);
}

// Its adjoint from the saved gates and cell: given dh (output + recurrent) and dc carried from
// step t+1, writes the pre-activation gradients and returns dc for step t-1 (dc f).
template <typename T>
SF_HOST_DEVICE inline T LstmCellGrad(T i, T f, T g, T o, T c, T c_prev, T dh, T dc_next, T& dzi,
                                     T& dzf, T& dzg, T& dzo) {
  const T tc = std::tanh(c);
  const T dc = dh * o * (T(1) - tc * tc) + dc_next;
  dzi = dc * g * i * (T(1) - i);
  dzf = dc * c_prev * f * (T(1) - f);
  dzg = dc * i * (T(1) - g * g);
  dzo = dh * tc * o * (T(1) - o);
  return dc * f;
}

}  // namespace shardflow::pointwise
