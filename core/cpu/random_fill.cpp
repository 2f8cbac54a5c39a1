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

// Element e of a slice (outer, size, inner) of a tensor (outer, full, inner) taken at `begin`
// along its middle dimension draws the counter of its place in the whole tensor.
namespace {
template <typename F>
void ForSlice(const SliceIndex& s, F&& f) {
  int64_t e = 0;
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < s.size; ++j) {
      const uint64_t base = static_cast<uint64_t>((o * s.full + s.begin + j) * s.inner);
      for (int64_t k = 0; k < s.inner; ++k, ++e) f(e, base + static_cast<uint64_t>(k));
    }
  }
}
}  // namespace

template <typename T>
void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                      const T* x, T* mask, T* y) {
  ForSlice(s, [&](int64_t i, uint64_t c) {
    mask[i] = RandomUniform(seed, stream, c) >= rate ? scale : T(0);
    y[i] = x[i] * mask[i];
  });
}

template <typename T>
void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream, T* w) {
  ForSlice(s, [&](int64_t i, uint64_t c) {
    w[i] = static_cast<T>(stddev * RandomNormal(seed, stream, c));
  });
}

template <typename T>
void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream, T* w) {
  ForSlice(s, [&](int64_t i, uint64_t c) {
    const double u = RandomUniform(seed, stream, c);
    w[i] = static_cast<T>((2.0 * u - 1.0) * limit);
  });
}

#define SF_INSTANTIATE(T)                                                                          \
  template void DropoutMask<T>(int64_t, float, T, uint64_t, uint64_t, const T*, T*, T*);           \
  template void FillNormal<T>(int64_t, double, uint64_t, uint64_t, T*);                            \
  template void FillUniform<T>(int64_t, double, uint64_t, uint64_t, T*);                           \
  template void DropoutMaskSlice<T>(const SliceIndex&, float, T, uint64_t, uint64_t, const T*, T*, \
                                    T*);                                                           \
  template void FillNormalSlice<T>(const SliceIndex&, double, uint64_t, uint64_t, T*);             \
  template void FillUniformSlice<T>(const SliceIndex&, double, uint64_t, uint64_t, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
