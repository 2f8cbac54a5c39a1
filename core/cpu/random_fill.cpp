// Random-fill CPU kernels: element i of a fill draws from the counter-based generator at
// (seed, stream, i), so the result does not depend on how the loop is split or ordered.
#include <cmath>

#include "core/cpu/kernels.hpp"
#include "core/random.hpp"

namespace shardflow::cpu {

template <typename T>
void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                 T* mask, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = RandomUniform(seed, stream, static_cast<uint64_t>(i)) >= rate ? scale : T(0);
    y[i] = x[i] * mask[i];
  }
}

template <typename T>
void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) {
  for (int64_t i = 0; i < n; ++i) {
    w[i] = static_cast<T>(stddev * RandomNormal(seed, stream, static_cast<uint64_t>(i)));
  }
}

template <typename T>
void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) {
  for (int64_t i = 0; i < n; ++i) {
    const double u = RandomUniform(seed, stream, static_cast<uint64_t>(i));
    w[i] = static_cast<T>((2.0 * u - 1.0) * limit);
  }
}

#define SF_INSTANTIATE(T)                                                                \
  template void DropoutMask<T>(int64_t, float, T, uint64_t, uint64_t, const T*, T*, T*); \
  template void FillNormal<T>(int64_t, double, uint64_t, uint64_t, T*);                  \
  template void FillUniform<T>(int64_t, double, uint64_t, uint64_t, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
