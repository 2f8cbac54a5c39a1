// Vectorised transcendental functions for the float kernels, through Eigen's packet math (its
// rational tanh and Cephes-style exp: within a few ulp of libm, 8 or 16 floats per
// instruction instead of a libm call per element). GELU spent a third of a transformer's
// training step in libm's tanhf before (`shardflow-bench transformer`, perf). Kept in one file so
// only it pays Eigen's compile time (as core/cpu/gemm.cpp).
// Every element takes the packet path whatever the arrays' alignment, so a value's result does
// not depend on where it lies (nor on the thread count of the kernels that call these).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace shardflow::cpu {

// y[i] = tanh(x[i]), i < n; x and y may be the same array.
void TanhFloat(int64_t n, const float* x, float* y);
// y[i] = exp(x[i]), i < n; x and y may be the same array. Below the float range (x < -87.3,
// -inf included) the result is 0 or a denormal, 0 where denormals are flushed (the kernels'
// threads).
void ExpFloat(int64_t n, const float* x, float* y);

}  // namespace shardflow::cpu
