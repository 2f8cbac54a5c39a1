#include "core/cpu/im2col.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/cpu/parallel.hpp"
#include "core/error.hpp"

namespace shardflow::cpu {

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

// One receptive field: KH runs of KWC values, `pitch` apart in the source image. The short
// runs of first layers (KW * C = 3, 5, 7 for one channel) get loops of a known length.
template <typename T, int64_t kRun>
void CopyWindowFixed(const T* src, int64_t pitch, int64_t kh, T* out) {
  for (int64_t i = 0; i < kh; ++i, src += pitch, out += kRun) {
    for (int64_t t = 0; t < kRun; ++t) out[t] = src[t];
  }
}
template <typename T>
void CopyWindow(const T* src, int64_t pitch, int64_t kh, int64_t kwc, T* out) {
  switch (kwc) {
    case 3:
      CopyWindowFixed<T, 3>(src, pitch, kh, out);
      return;
    case 5:
      CopyWindowFixed<T, 5>(src, pitch, kh, out);
      return;
    case 7:
      CopyWindowFixed<T, 7>(src, pitch, kh, out);
      return;
    default:
      for (int64_t i = 0; i < kh; ++i, src += pitch, out += kwc) CopyRun(src, kwc, out);
  }
}

// The image every window of which lies inside: x itself when no window hangs over the edge,
// otherwise a copy with the padding written as zeros, (OH-1)*S+KH rows of (OW-1)*S+KW pixels.
template <typename T>
struct PaddedImage {
  const T* data;
  int64_t pitch;  // values between image rows
};
template <typename T>
PaddedImage<T> Padded(const ConvGeometry& g, const T* img, std::vector<T>& buffer) {
  const int64_t ph = (g.oh - 1) * g.stride + g.kh, pw = (g.ow - 1) * g.stride + g.kw;
  if (g.pad_top == 0 && g.pad_left == 0 && ph <= g.h && pw <= g.w) return {img, g.w * g.c};
  buffer.resize(static_cast<size_t>(ph * pw * g.c));
  const int64_t inside0 = std::min(g.pad_left, pw), inside1 = std::min(g.pad_left + g.w, pw);
  for (int64_t r = 0; r < ph; ++r) {
    T* row = buffer.data() + r * pw * g.c;
    const int64_t ih = r - g.pad_top;
    if (ih < 0 || ih >= g.h) {
      std::fill(row, row + pw * g.c, T(0));
      continue;
    }
    std::fill(row, row + inside0 * g.c, T(0));
    std::copy(img + ih * g.w * g.c, img + (ih * g.w + inside1 - inside0) * g.c,
              row + inside0 * g.c);
    std::fill(row + inside1 * g.c, row + pw * g.c, T(0));
  }
  return {buffer.data(), pw * g.c};
}

// Rows [r0, r1) of cols, row r = (b * OH + oh) * OW + ow: each image's rows from its padded
// copy, one branch-free receptive field at a time.
template <typename T>
void Im2ColRows(const ConvGeometry& g, int64_t r0, int64_t r1, const T* x, T* cols) {
  const int64_t row = g.kh * g.kw * g.c, kwc = g.kw * g.c, per_image = g.oh * g.ow;
  thread_local std::vector<T> buffer;
  for (int64_t r = r0; r < r1;) {
    const int64_t b = r / per_image, end = std::min(r1, (b + 1) * per_image);
    const PaddedImage<T> img = Padded(g, x + b * g.h * g.w * g.c, buffer);
    for (; r < end; ++r) {
      const int64_t ow = r % g.ow, oh = (r / g.ow) % g.oh;
      CopyWindow(img.data + oh * g.stride * img.pitch + ow * g.stride * g.c, img.pitch, g.kh, kwc,
                 cols + r * row);
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
