#include "core/cpu/im2col.hpp"

#include <algorithm>
#include <string>

#include "core/cpu/parallel.hpp"
#include "core/error.hpp"

namespace shardflow::cpu {

ConvGeometry MakeConvGeometry(int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                              int64_t stride, bool same) {
  if (kh <= 0 || kw <= 0 || stride <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "kernel size and stride must be positive, got " +
                                                 std::to_string(kh) + "x" + std::to_string(kw) +
                                                 " stride " + std::to_string(stride));
  }
  ConvGeometry g{.h = h, .w = w, .c = c, .kh = kh, .kw = kw, .stride = stride};
  if (same) {
    g.oh = (h + stride - 1) / stride;
    g.ow = (w + stride - 1) / stride;
    g.pad_top = std::max<int64_t>((g.oh - 1) * stride + kh - h, 0) / 2;
    g.pad_left = std::max<int64_t>((g.ow - 1) * stride + kw - w, 0) / 2;
  } else {
    if (kh > h || kw > w) {
      throw Error(ErrorCode::kInvalidArgument,
                  "a " + std::to_string(kh) + "x" + std::to_string(kw) + " window does not fit a " +
                      std::to_string(h) + "x" + std::to_string(w) + " input with valid padding",
                  {.hint = "use same padding or a smaller kernel"});
    }
    g.oh = (h - kh) / stride + 1;
    g.ow = (w - kw) / stride + 1;
  }
  return g;
}

namespace {

// The window columns [j0, j1) of output column ow that fall inside the image (the rest is
// padding); j0 <= j1.
struct InsideRun {
  int64_t j0, j1;
};
inline InsideRun Inside(const ConvGeometry& g, int64_t ow) {
  const int64_t iw0 = ow * g.stride - g.pad_left;
  const int64_t j0 = std::clamp<int64_t>(-iw0, 0, g.kw);
  const int64_t j1 = std::clamp<int64_t>(g.w - iw0, j0, g.kw);
  return {j0, j1};
}

template <typename T>
void CopyRun(const T* src, int64_t n, T* dst) {
  for (int64_t t = 0; t < n; ++t) dst[t] = src[t];
}

// Rows [r0, r1) of cols, row r = (b * OH + oh) * OW + ow.
template <typename T>
void Im2ColRows(const ConvGeometry& g, int64_t r0, int64_t r1, const T* x, T* cols) {
  const int64_t row = g.kh * g.kw * g.c, kwc = g.kw * g.c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t ow = r % g.ow, oh = (r / g.ow) % g.oh, b = r / (g.ow * g.oh);
    const T* img = x + b * g.h * g.w * g.c;
    const InsideRun run = Inside(g, ow);
    const int64_t iw0 = ow * g.stride - g.pad_left;
    T* out = cols + r * row;
    for (int64_t i = 0; i < g.kh; ++i, out += kwc) {
      const int64_t ih = oh * g.stride - g.pad_top + i;
      if (ih < 0 || ih >= g.h || run.j0 == run.j1) {
        std::fill(out, out + kwc, T(0));
        continue;
      }
      std::fill(out, out + run.j0 * g.c, T(0));
      CopyRun(img + (ih * g.w + iw0 + run.j0) * g.c, (run.j1 - run.j0) * g.c, out + run.j0 * g.c);
      std::fill(out + run.j1 * g.c, out + kwc, T(0));
    }
  }
}

}  // namespace

// One output pixel's row is KH runs of KW*C values; the part of each run inside the image is
// one contiguous stretch of the NHWC input (KW*C values when no padding is involved), copied in
// one go; the padding part is zeroed. Rows are split over the intra-op threads.
template <typename T>
void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) {
  ParallelFor(batch * g.oh * g.ow, 256,
              [&](int64_t r0, int64_t r1) { Im2ColRows(g, r0, r1, x, cols); });
}

// The adjoint, image by image (images split over the intra-op threads; within one the rows add
// in order, so the result does not depend on the thread count).
template <typename T>
void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) {
  const int64_t row = g.kh * g.kw * g.c, kwc = g.kw * g.c;
  ParallelFor(batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      T* img = dx + b * g.h * g.w * g.c;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const T* in = cols + ((b * g.oh + oh) * g.ow + ow) * row;
          const InsideRun run = Inside(g, ow);
          const int64_t iw0 = ow * g.stride - g.pad_left;
          const int64_t n = (run.j1 - run.j0) * g.c;
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ih = oh * g.stride - g.pad_top + i;
            if (ih < 0 || ih >= g.h) continue;
            const T* src = in + i * kwc + run.j0 * g.c;
            T* dst = img + (ih * g.w + iw0 + run.j0) * g.c;
            for (int64_t t = 0; t < n; ++t) dst[t] += src[t];
          }
        }
      }
    }
  });
}

template void Im2Col<float>(const ConvGeometry&, int64_t, const float*, float*);
template void Im2Col<double>(const ConvGeometry&, int64_t, const double*, double*);
template void Col2ImAdd<float>(const ConvGeometry&, int64_t, const float*, float*);
template void Col2ImAdd<double>(const ConvGeometry&, int64_t, const double*, double*);

}  // namespace shardflow::cpu
