// Pooling CPU kernels over NHWC images: max/average windows and global average pooling.
#include <algorithm>
#include <vector>

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
void PoolGradImage(const PoolGeometry& g, bool max, const T* xp, const T* yp, const T* d, T* o,
                   T* taken) {
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
              oi[ch] += hit * dy[ch];
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
void MaxPoolGradTiledImage(const PoolGeometry& g, const T* xp, const T* yp, const T* d, T* o,
                           T* taken) {
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
            oi[ch] = T(0) + hit * dy[ch];  // as 0 += hit * dy: NaN for a loser of an Inf dy
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

// Its gradient: the first of the four equal to the maximum takes dy, the others 0 (as
// MaxPoolGradTiledImage). Two passes per output, each loop over the channels with one store
// stream so that it vectorises: which of the four won (0-3, 4 for none: NaN), then the four
// gradient rows. `win` holds C values.
template <typename T>
void MaxPool2x2GradImage(const PoolGeometry& g, const T* xp, const T* yp, const T* d, T* o,
                         T* win) {
  const int64_t w = g.w, c = g.c;
  for (int64_t i = 0; i < g.oh; ++i) {
    for (int64_t j = 0; j < g.ow; ++j) {
      const int64_t at = (2 * i * w + 2 * j) * c, out = (i * g.ow + j) * c;
      const T* x[4] = {xp + at, xp + at + c, xp + at + w * c, xp + at + w * c + c};
      const T* m = yp + out;
      const T* dy = d + out;
      for (int64_t ch = 0; ch < c; ++ch) {
        const T mv = m[ch];
        T who = T(4);
        who = x[3][ch] == mv ? T(3) : who;
        who = x[2][ch] == mv ? T(2) : who;
        who = x[1][ch] == mv ? T(1) : who;
        who = x[0][ch] == mv ? T(0) : who;
        win[ch] = who;
      }
      for (int q = 0; q < 4; ++q) {
        T* oq = o + (x[q] - xp);
        for (int64_t ch = 0; ch < c; ++ch) {
          oq[ch] = T(0) + (win[ch] == T(q) ? T(1) : T(0)) * dy[ch];  // the same bits, Inf/-0 too
        }
      }
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
// equal to the maximum. Average: spread evenly over the window. The product hit * dy adds an
// exact 0 where the element was not taken, so the sums are those of the scatter loop.
template <typename T>
void Pool2DGrad(const PoolGeometry& g, bool max, int64_t b, const T* xp, const T* yp, const T* d,
                T* o) {
  const int64_t in = g.h * g.w * g.c, out = g.oh * g.ow * g.c;
  const bool tiled = max && g.k == g.stride;
  ParallelFor(b, 1, [&](int64_t n0, int64_t n1) {
    std::vector<T> taken(static_cast<size_t>(g.c));
    if (!tiled) std::fill(o + n0 * in, o + n1 * in, T(0));
    for (int64_t n = n0; n < n1; ++n) {
      if (tiled && g.k == 2) {
        MaxPool2x2GradImage(g, xp + n * in, yp + n * out, d + n * out, o + n * in, taken.data());
      } else if (tiled) {
        MaxPoolGradTiledImage(g, xp + n * in, yp + n * out, d + n * out, o + n * in, taken.data());
      } else {
        PoolGradImage(g, max, xp + n * in, yp + n * out, d + n * out, o + n * in, taken.data());
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
