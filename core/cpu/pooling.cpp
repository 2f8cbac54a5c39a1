// Pooling CPU kernels over NHWC images: max/average windows and global average pooling.
#include <algorithm>

#include "core/cpu/kernels.hpp"

namespace shardflow::cpu {

// x is (B, H, W, C); y is (B, OH, OW, C). Channels innermost: each window position contributes
// a contiguous run of C values, so the compare/accumulate loops vectorise. For max pooling the
// first maximum wins (strict >). Max pooling keeps no argmax array: the backward pass finds the
// first window element equal to the output again (cheaper than writing an index per output in
// the forward pass, which the benchmark showed dominating the layer).
template <typename T>
void Pool2D(const PoolGeometry& g, bool max, int64_t b, const T* xp, T* yp) {
  const int64_t h = g.h, w = g.w, c = g.c, k = g.k, s = g.stride, oh = g.oh, ow = g.ow;
  const T inv = T(1) / static_cast<T>(k * k);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t o = ((n * oh + i) * ow + j) * c;
        T* yo = yp + o;
        for (int64_t di = 0; di < k; ++di)
          for (int64_t dj = 0; dj < k; ++dj) {
            const int64_t base = ((n * h + i * s + di) * w + j * s + dj) * c;
            const T* xi = xp + base;
            const bool first = di == 0 && dj == 0;
            if (max) {
              for (int64_t ch = 0; ch < c; ++ch) yo[ch] = first ? xi[ch] : std::max(yo[ch], xi[ch]);
            } else {
              for (int64_t ch = 0; ch < c; ++ch) yo[ch] = (first ? T(0) : yo[ch]) + xi[ch];
            }
          }
        if (!max) {
          for (int64_t ch = 0; ch < c; ++ch) yo[ch] *= inv;
        }
      }
}

// dx (B, H, W, C) is overwritten. Max: each output's gradient goes to the first window element
// equal to the maximum. Average: spread evenly over the window.
template <typename T>
void Pool2DGrad(const PoolGeometry& g, bool max, int64_t b, const T* xp, const T* yp, const T* d,
                T* o) {
  const int64_t h = g.h, w = g.w, c = g.c, k = g.k, s = g.stride, oh = g.oh, ow = g.ow;
  std::fill(o, o + b * h * w * c, T(0));
  if (max) {
    for (int64_t n = 0; n < b; ++n)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t out = ((n * oh + i) * ow + j) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            const T m = yp[out + ch];
            bool found = false;
            for (int64_t di = 0; di < k && !found; ++di)
              for (int64_t dj = 0; dj < k && !found; ++dj) {
                const int64_t idx = ((n * h + i * s + di) * w + j * s + dj) * c + ch;
                if (xp[idx] == m) {
                  o[idx] += d[out + ch];
                  found = true;
                }
              }
          }
        }
    return;
  }
  const T inv = T(1) / static_cast<T>(k * k);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          const T gr = d[((n * oh + i) * ow + j) * c + ch] * inv;
          for (int64_t di = 0; di < k; ++di)
            for (int64_t dj = 0; dj < k; ++dj)
              o[((n * h + i * s + di) * w + j * s + dj) * c + ch] += gr;
        }
}

// x is (B, P, C) with P = H * W; y is (B, C).
template <typename T>
void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* xp, T* yp) {
  const T inv = T(1) / static_cast<T>(p);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] = T(0);
    for (int64_t q = 0; q < p; ++q)
      for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] += xp[(n * p + q) * c + ch];
    for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] *= inv;
  }
}

template <typename T>
void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* d, T* o) {
  const T inv = T(1) / static_cast<T>(p);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t q = 0; q < p; ++q)
      for (int64_t ch = 0; ch < c; ++ch) o[(n * p + q) * c + ch] = d[n * c + ch] * inv;
}

#define SF_INSTANTIATE(T)                                                                       \
  template void Pool2D<T>(const PoolGeometry&, bool, int64_t, const T*, T*);                    \
  template void Pool2DGrad<T>(const PoolGeometry&, bool, int64_t, const T*, const T*, const T*, \
                              T*);                                                              \
  template void GlobalAvgPool<T>(int64_t, int64_t, int64_t, const T*, T*);                      \
  template void GlobalAvgPoolGrad<T>(int64_t, int64_t, int64_t, const T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
