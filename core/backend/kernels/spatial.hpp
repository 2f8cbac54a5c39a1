// Index kernels over NHWC images: pooling windows, global average pooling, and the im2col /
// col2im data movement of convolutions, shared by the CUDA backend and its host twin (see
// kernels/elementwise.hpp for what an index kernel is).
//
// Adjoints that the CPU computes as scatters (pooling gradients, col2im) are gathers here: each
// index owns one input element and visits, in the CPU's order, every window that covers it, so
// no two GPU threads add into the same element and the sums are taken in the CPU's order.
#pragma once

#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/backend/conv_geometry.hpp"
#include "core/backend/host_device.hpp"
#include "core/backend/pointwise.hpp"

namespace shardflow::kernels {

// The first index q in [0, count) with q * stride >= lo (lo may be negative).
SF_HOST_DEVICE inline int64_t FirstAtLeast(int64_t lo, int64_t stride) {
  return lo <= 0 ? 0 : (lo + stride - 1) / stride;
}

// Pool2D: x (B, H, W, C) -> y (B, OH, OW, C); max (first maximum, as std::max) or average.
// Index: element of y.
template <typename T>
struct Pool2DK {
  PoolGeometry g;
  bool max;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t ch = idx % g.c, j = (idx / g.c) % g.ow, i = (idx / (g.c * g.ow)) % g.oh;
    const int64_t n = idx / (g.c * g.ow * g.oh);
    const T* img = x + n * g.h * g.w * g.c;
    T acc = T(0);
    for (int64_t di = 0; di < g.k; ++di)
      for (int64_t dj = 0; dj < g.k; ++dj) {
        const T v = img[((i * g.stride + di) * g.w + j * g.stride + dj) * g.c + ch];
        if (max) {
          acc = (di == 0 && dj == 0) ? v : (acc < v ? v : acc);
        } else {
          acc += v;
        }
      }
    y[idx] = max ? acc : acc * (T(1) / static_cast<T>(g.k * g.k));
  }
};

// Pool2DGrad: dx (B, H, W, C) from x, y and dy (B, OH, OW, C). Max: a window's gradient goes to
// its first element equal to its output; average: dy / K^2 to each element. Windows covering the
// element are visited in (row, column) order and every one adds hit * dy, as the CPU loop does;
// with relu (max only) hit * relu'(y) dy. Index: element of dx.
template <typename T>
struct Pool2DGradK {
  PoolGeometry g;
  bool max, relu;
  const T* x;
  const T* y;
  const T* dy;
  T* dx;

  // Is (h, w) the first element of window (i, j) equal to that window's maximum m?
  SF_HOST_DEVICE bool FirstMax(const T* img, int64_t i, int64_t j, int64_t ch, T m, int64_t h,
                               int64_t w) const {
    for (int64_t di = 0; di < g.k; ++di)
      for (int64_t dj = 0; dj < g.k; ++dj) {
        const int64_t hh = i * g.stride + di, ww = j * g.stride + dj;
        if (img[(hh * g.w + ww) * g.c + ch] == m) return hh == h && ww == w;
      }
    return false;
  }

  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t ch = idx % g.c, w = (idx / g.c) % g.w, h = (idx / (g.c * g.w)) % g.h;
    const int64_t n = idx / (g.c * g.w * g.h);
    const T* img = x + n * g.h * g.w * g.c;
    const int64_t out0 = n * g.oh * g.ow * g.c;
    const T inv = T(1) / static_cast<T>(g.k * g.k);
    const int64_t i1 = h / g.stride < g.oh - 1 ? h / g.stride : g.oh - 1;
    const int64_t j1 = w / g.stride < g.ow - 1 ? w / g.stride : g.ow - 1;
    T acc = T(0);
    for (int64_t i = FirstAtLeast(h - g.k + 1, g.stride); i <= i1; ++i)
      for (int64_t j = FirstAtLeast(w - g.k + 1, g.stride); j <= j1; ++j) {
        const int64_t o = out0 + (i * g.ow + j) * g.c + ch;
        if (max) {
          const T d = relu ? pointwise::ReluGrad(y[o], dy[o]) : dy[o];
          acc += (FirstMax(img, i, j, ch, y[o], h, w) ? T(1) : T(0)) * d;
        } else {
          acc += dy[o] * inv;
        }
      }
    dx[idx] = acc;
  }
};

// x (B, P, C) -> y (B, C), the mean over P (summed in order, then scaled). Index: element of y.
template <typename T>
struct GlobalAvgPoolK {
  int64_t p, c;
  const T* x;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t n = idx / c, ch = idx % c;
    T acc = T(0);
    for (int64_t q = 0; q < p; ++q) acc += x[(n * p + q) * c + ch];
    y[idx] = acc * (T(1) / static_cast<T>(p));
  }
};

// dx (B, P, C) = dy (B, C) / P. Index: element of dx.
template <typename T>
struct GlobalAvgPoolGradK {
  int64_t p, c;
  const T* dy;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    dx[idx] = dy[(idx / (p * c)) * c + idx % c] * (T(1) / static_cast<T>(p));
  }
};

// cols (B*OH*OW, KH*KW*C) from x (B, H, W, C), zeros over the padding. Index: element of cols.
template <typename T>
struct Im2ColK {
  ConvGeometry g;
  const T* x;
  T* cols;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t row = g.kh * g.kw * g.c;
    const int64_t r = idx / row, q = idx % row;
    const int64_t ch = q % g.c, j = (q / g.c) % g.kw, i = q / (g.c * g.kw);
    const int64_t ow = r % g.ow, oh = (r / g.ow) % g.oh, b = r / (g.ow * g.oh);
    const int64_t ih = oh * g.stride - g.pad_top + i, iw = ow * g.stride - g.pad_left + j;
    const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
    cols[idx] = inside ? x[((b * g.h + ih) * g.w + iw) * g.c + ch] : T(0);
  }
};

// dx (B, H, W, C) += the entries of cols that im2col copied from each element, added in output
// pixel order (oh, ow ascending) as the CPU's scatter does. Index: element of dx.
template <typename T>
struct Col2ImAddK {
  ConvGeometry g;
  const T* cols;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t ch = idx % g.c, iw = (idx / g.c) % g.w, ih = (idx / (g.c * g.w)) % g.h;
    const int64_t b = idx / (g.c * g.w * g.h);
    const int64_t row = g.kh * g.kw * g.c;
    const int64_t hp = ih + g.pad_top, wp = iw + g.pad_left;  // padded coordinates
    const int64_t oh1 = hp / g.stride < g.oh - 1 ? hp / g.stride : g.oh - 1;
    const int64_t ow1 = wp / g.stride < g.ow - 1 ? wp / g.stride : g.ow - 1;
    T acc = dx[idx];
    for (int64_t oh = FirstAtLeast(hp - g.kh + 1, g.stride); oh <= oh1; ++oh)
      for (int64_t ow = FirstAtLeast(wp - g.kw + 1, g.stride); ow <= ow1; ++ow) {
        const int64_t i = hp - oh * g.stride, j = wp - ow * g.stride;
        acc += cols[((b * g.oh + oh) * g.ow + ow) * row + (i * g.kw + j) * g.c + ch];
      }
    dx[idx] = acc;
  }
};

// Images padded at the bottom and right, for a library that pads both sides alike
// (core/cuda/cudnn_conv.hpp): xp (B, H + eh, W + ew, C) is x (B, H, W, C) with eh zero rows
// below and ew zero columns to the right. Index: element of xp.
template <typename T>
struct PadBottomRightK {
  int64_t h, w, c, eh, ew;
  const T* x;
  T* xp;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t pw = w + ew, ph = h + eh;
    const int64_t ch = idx % c, j = (idx / c) % pw, i = (idx / (c * pw)) % ph;
    const int64_t b = idx / (c * pw * ph);
    xp[idx] = i < h && j < w ? x[((b * h + i) * w + j) * c + ch] : T(0);
  }
};

// Its adjoint's interior: dx (B, H, W, C) = the top-left H x W of dxp (B, H + eh, W + ew, C)
// (the padding's gradient is dropped). Index: element of dx.
template <typename T>
struct CropTopLeftK {
  int64_t h, w, c, eh, ew;
  const T* dxp;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t ch = idx % c, j = (idx / c) % w, i = (idx / (c * w)) % h;
    const int64_t b = idx / (c * w * h);
    dx[idx] = dxp[((b * (h + eh) + i) * (w + ew) + j) * c + ch];
  }
};

}  // namespace shardflow::kernels
