#include "core/cpu/im2col.hpp"

#include <algorithm>
#include <cstring>
#include <string>

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

// One output pixel's row is KH runs of KW*C values; each (kh, kw) contributes a contiguous
// run of C channels copied with memcpy (or zeroed when it falls in the padding).
template <typename T>
void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) {
  const int64_t row = g.kh * g.kw * g.c;
  const size_t run = static_cast<size_t>(g.c) * sizeof(T);
  for (int64_t b = 0; b < batch; ++b) {
    const T* img = x + b * g.h * g.w * g.c;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        T* out = cols + ((b * g.oh + oh) * g.ow + ow) * row;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t ih = oh * g.stride - g.pad_top + i;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = ow * g.stride - g.pad_left + j;
            T* dst = out + (i * g.kw + j) * g.c;
            if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
              std::memset(dst, 0, run);
            } else {
              std::memcpy(dst, img + (ih * g.w + iw) * g.c, run);
            }
          }
        }
      }
    }
  }
}

template <typename T>
void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) {
  const int64_t row = g.kh * g.kw * g.c;
  for (int64_t b = 0; b < batch; ++b) {
    T* img = dx + b * g.h * g.w * g.c;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const T* in = cols + ((b * g.oh + oh) * g.ow + ow) * row;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t ih = oh * g.stride - g.pad_top + i;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = ow * g.stride - g.pad_left + j;
            if (iw < 0 || iw >= g.w) continue;
            const T* src = in + (i * g.kw + j) * g.c;
            T* dst = img + (ih * g.w + iw) * g.c;
            for (int64_t c = 0; c < g.c; ++c) dst[c] += src[c];
          }
        }
      }
    }
  }
}

template void Im2Col<float>(const ConvGeometry&, int64_t, const float*, float*);
template void Im2Col<double>(const ConvGeometry&, int64_t, const double*, double*);
template void Col2ImAdd<float>(const ConvGeometry&, int64_t, const float*, float*);
template void Col2ImAdd<double>(const ConvGeometry&, int64_t, const double*, double*);

}  // namespace shardflow::cpu
