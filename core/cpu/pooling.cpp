// Pooling CPU kernels over NHWC images: max/average windows and global average pooling.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/backend/pointwise.hpp"
#include "core/cpu/kernels.hpp"
#include "core/cpu/parallel.hpp"

namespace shardflow::cpu {

namespace {

// One image of Pool2D: x (H, W, C) -> y (OH, OW, C).
template <typename T>
void PoolImage(const PoolGeometry& g, bool max, const T* xp, T* yp) {
  const int64_t w = g.w, c = g.c, k = g.k, s = g.stride;
  const T inv = T(1) / static_cast<T>(k * k);
  for (int64_t i = 0; i < g.oh; ++i)
    for (int64_t j = 0; j < g.ow; ++j) {
      T* yo = yp + (i * g.ow + j) * c;
      for (int64_t di = 0; di < k; ++di)
        for (int64_t dj = 0; dj < k; ++dj) {
          const T* xi = xp + ((i * s + di) * w + j * s + dj) * c;
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

// One image of Pool2DGrad, dx (H, W, C) already zero. Max: the window elements are visited in
// order with a per-channel "taken" mask (0 or 1, in `taken`, C values), so the first element
// equal to the maximum gets the gradient and the channel loop stays branch-free (vectorised).
template <typename T>
void PoolGradImage(const PoolGeometry& g, bool max, bool relu, const T* xp, const T* yp, const T* d,
                   T* o, T* taken) {
  const int64_t w = g.w, c = g.c, k = g.k, s = g.stride;
  const T inv = T(1) / static_cast<T>(k * k);
  for (int64_t i = 0; i < g.oh; ++i)
    for (int64_t j = 0; j < g.ow; ++j) {
      const int64_t out = (i * g.ow + j) * c;
      const T* m = yp + out;
      const T* dy = d + out;
      if (max) std::fill(taken, taken + c, T(0));
      for (int64_t di = 0; di < k; ++di)
        for (int64_t dj = 0; dj < k; ++dj) {
          const int64_t idx = ((i * s + di) * w + j * s + dj) * c;
          const T* xi = xp + idx;
          T* oi = o + idx;
          if (max) {
            for (int64_t ch = 0; ch < c; ++ch) {
              const T hit = (xi[ch] == m[ch] && taken[ch] == T(0)) ? T(1) : T(0);
              oi[ch] += hit * (relu ? pointwise::ReluGrad(m[ch], dy[ch]) : dy[ch]);
              taken[ch] += hit;
            }
          } else {
            for (int64_t ch = 0; ch < c; ++ch) oi[ch] += dy[ch] * inv;
          }
        }
    }
}

// Max pooling with windows that tile the image (k == stride, the common 2x2/2): each input
// element is in one window at most, so its gradient is written once (the first maximum's
// dy, else 0) with no zeroing pass and no read-back; the rows and columns no window covers
// (odd sizes) are zeroed. The same bits as PoolGradImage (0 + hit * dy, non-finite dy too).
template <typename T>
void MaxPoolGradTiledImage(const PoolGeometry& g, bool relu, const T* xp, const T* yp, const T* d,
                           T* o, T* taken) {
  const int64_t w = g.w, c = g.c, k = g.k;
  for (int64_t i = 0; i < g.oh; ++i) {
    for (int64_t j = 0; j < g.ow; ++j) {
      const int64_t out = (i * g.ow + j) * c;
      const T* m = yp + out;
      const T* dy = d + out;
      std::fill(taken, taken + c, T(0));
      for (int64_t di = 0; di < k; ++di) {
        for (int64_t dj = 0; dj < k; ++dj) {
          const int64_t idx = ((i * k + di) * w + j * k + dj) * c;
          const T* xi = xp + idx;
          T* oi = o + idx;
          for (int64_t ch = 0; ch < c; ++ch) {
            const T hit = (xi[ch] == m[ch] && taken[ch] == T(0)) ? T(1) : T(0);
            const T dv = relu ? pointwise::ReluGrad(m[ch], dy[ch]) : dy[ch];
            oi[ch] = T(0) + hit * dv;  // as 0 += hit * dy: NaN for a loser of an Inf dy
            taken[ch] += hit;
          }
        }
      }
    }
    for (int64_t di = 0; di < k; ++di) {  // columns past the last window
      T* row = o + ((i * k + di) * w + g.ow * k) * c;
      std::fill(row, row + (w - g.ow * k) * c, T(0));
    }
  }
  std::fill(o + g.oh * k * w * c, o + g.h * w * c, T(0));  // rows past the last window
}

// Max pooling with 2 x 2 windows and stride 2, forward: the same comparisons in the same order
// as PoolImage (std::max over x00, x01, x10, x11), with the four rows of C values named.
template <typename T>
void MaxPool2x2Image(const PoolGeometry& g, const T* xp, T* yp) {
  const int64_t w = g.w, c = g.c;
  for (int64_t i = 0; i < g.oh; ++i) {
    for (int64_t j = 0; j < g.ow; ++j) {
      const T* x00 = xp + (2 * i * w + 2 * j) * c;
      const T *x01 = x00 + c, *x10 = x00 + w * c, *x11 = x10 + c;
      T* y = yp + (i * g.ow + j) * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        y[ch] = std::max(std::max(std::max(x00[ch], x01[ch]), x10[ch]), x11[ch]);
      }
    }
  }
}

// Its gradient: the first of the four equal to the maximum takes dy (relu'(m) dy with a ReLU
// absorbed), the others 0, as MaxPoolGradTiledImage: 0 + hit * dy at every element, so a loser
// of an Inf or NaN dy gets NaN and a -0 leaves +0, the bits of 0 += hit * dy. One pass per output
// position reads the four inputs, m and dy once and writes the four gradients. GCC does not
// if-convert these selects (the loops stayed scalar), so float runs 8 channels at a time in
// vector-extension code (x86-64-v3's ymm; compares give all-ones lanes) and the rest one by one.
template <typename T, bool kRelu>
void MaxPool2x2GradChannels(int64_t c0, int64_t c, const T* const x[4], const T* m, const T* dy,
                            T* const o[4]) {
  for (int64_t ch = c0; ch < c; ++ch) {
    const T mv = m[ch];
    const T dv = kRelu ? pointwise::ReluGrad(mv, dy[ch]) : dy[ch];
    bool taken = false;
    for (int q = 0; q < 4; ++q) {
      const bool hit = !taken && x[q][ch] == mv;
      taken = taken || hit;
      o[q][ch] = T(0) + (hit ? T(1) : T(0)) * dv;
    }
  }
}

using Floats8 = float __attribute__((vector_size(32)));
using Ints8 = int32_t __attribute__((vector_size(32)));

inline Floats8 Load8(const float* p) {
  Floats8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store8(float* p, Floats8 v) { std::memcpy(p, &v, sizeof(v)); }

template <bool kRelu>
int64_t MaxPool2x2GradVectors(int64_t c, const float* const x[4], const float* m, const float* dy,
                              float* const o[4]) {
  const Ints8 one = reinterpret_cast<Ints8>(Floats8{} + 1.0f);  // the bits of 1.0f
  const Floats8 zero{};
  int64_t ch = 0;
  for (; ch + 8 <= c; ch += 8) {
    const Floats8 mv = Load8(m + ch);
    Floats8 dv = Load8(dy + ch);
    if constexpr (kRelu) dv = reinterpret_cast<Floats8>(reinterpret_cast<Ints8>(dv) & (mv > zero));
    Ints8 taken{};
    for (int q = 0; q < 4; ++q) {
      const Ints8 hit = (Load8(x[q] + ch) == mv) & ~taken;
      taken |= hit;
      Store8(o[q] + ch, zero + reinterpret_cast<Floats8>(hit & one) * dv);
    }
  }
  return ch;
}

template <typename T, bool kRelu>
void MaxPool2x2GradImage(const PoolGeometry& g, const T* xp, const T* yp, const T* d, T* o) {
  const int64_t w = g.w, c = g.c;
  for (int64_t i = 0; i < g.oh; ++i) {
    for (int64_t j = 0; j < g.ow; ++j) {
      const int64_t at = (2 * i * w + 2 * j) * c, out = (i * g.ow + j) * c;
      const T* const x[4] = {xp + at, xp + at + c, xp + at + w * c, xp + at + w * c + c};
      T* const oq[4] = {o + at, o + at + c, o + at + w * c, o + at + w * c + c};
      int64_t done = 0;
      if constexpr (std::is_same_v<T, float>) {
        done = MaxPool2x2GradVectors<kRelu>(c, x, yp + out, d + out, oq);
      }
      MaxPool2x2GradChannels<T, kRelu>(done, c, x, yp + out, d + out, oq);
    }
    T* right = o + ((2 * i) * w + 2 * g.ow) * c;  // a column no window covers (odd width)
    std::fill(right, right + (w - 2 * g.ow) * c, T(0));
    std::fill(right + w * c, right + w * c + (w - 2 * g.ow) * c, T(0));
  }
  std::fill(o + 2 * g.oh * w * c, o + g.h * w * c, T(0));  // a row no window covers
}

}  // namespace

// x is (B, H, W, C); y is (B, OH, OW, C). Channels innermost: each window position contributes
// a contiguous run of C values, so the compare/accumulate loops vectorise. For max pooling the
// first maximum wins (strict >). Max pooling keeps no argmax array: the backward pass finds the
// first window element equal to the output again (cheaper than writing an index per output in
// the forward pass, which the benchmark showed dominating the layer). Images are split over the
// intra-op threads (each image's outputs computed by one thread, in the same order).
template <typename T>
void Pool2D(const PoolGeometry& g, bool max, int64_t b, const T* xp, T* yp) {
  ParallelFor(b, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* x = xp + n * g.h * g.w * g.c;
      T* y = yp + n * g.oh * g.ow * g.c;
      if (max && g.k == 2 && g.stride == 2) {
        MaxPool2x2Image(g, x, y);
      } else {
        PoolImage(g, max, x, y);
      }
    }
  });
}

// dx (B, H, W, C) is overwritten. Max: each output's gradient goes to the first window element
// equal to the maximum (relu'(y) dy with relu). Average: spread evenly over the window. The product
// hit * dy adds an exact 0 where the element was not taken, so the sums are those of the scatter
// loop.
template <typename T>
void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t b, const T* xp, const T* yp,
                const T* d, T* o) {
  const int64_t in = g.h * g.w * g.c, out = g.oh * g.ow * g.c;
  const bool tiled = max && g.k == g.stride;
  ParallelFor(b, 1, [&](int64_t n0, int64_t n1) {
    // The window-tracking scratch of the general and tiled paths (the 2x2 one needs none).
    std::vector<T> taken(static_cast<size_t>(tiled && g.k == 2 ? 0 : g.c));
    if (!tiled) std::fill(o + n0 * in, o + n1 * in, T(0));
    for (int64_t n = n0; n < n1; ++n) {
      if (tiled && g.k == 2 && relu) {
        MaxPool2x2GradImage<T, true>(g, xp + n * in, yp + n * out, d + n * out, o + n * in);
      } else if (tiled && g.k == 2) {
        MaxPool2x2GradImage<T, false>(g, xp + n * in, yp + n * out, d + n * out, o + n * in);
      } else if (tiled) {
        MaxPoolGradTiledImage(g, relu, xp + n * in, yp + n * out, d + n * out, o + n * in,
                              taken.data());
      } else {
        PoolGradImage(g, max, relu, xp + n * in, yp + n * out, d + n * out, o + n * in,
                      taken.data());
      }
    }
  });
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

#define SF_INSTANTIATE(T)                                                                   \
  template void Pool2D<T>(const PoolGeometry&, bool, int64_t, const T*, T*);                \
  template void Pool2DGrad<T>(const PoolGeometry&, bool, bool, int64_t, const T*, const T*, \
                              const T*, T*);                                                \
  template void GlobalAvgPool<T>(int64_t, int64_t, int64_t, const T*, T*);                  \
  template void GlobalAvgPoolGrad<T>(int64_t, int64_t, int64_t, const T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
