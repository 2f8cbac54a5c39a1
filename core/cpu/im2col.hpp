// im2col / col2im for NHWC images: the data movement that turns a convolution into one GEMM.
//
// For a window geometry (kernel KH x KW, stride S, padding before PT/PL), Im2Col writes one row
// per output pixel (b, oh, ow) of a batch of images x (B, H, W, C), holding the receptive field
// in (kh, kw, c) order: cols is (B*OH*OW, KH*KW*C), zeros where the window hangs over the
// padding. With the kernel stored (KH, KW, C, F) = (KH*KW*C, F) row-major, cols * kernel is
// the NHWC output (B*OH*OW, F). Col2ImAdd is the adjoint: it scatter-adds rows back into an
// image gradient.
#pragma once

#include <cstdint>

namespace shardflow::cpu {

struct ConvGeometry {
  int64_t h = 0, w = 0, c = 0;  // input height, width, channels
  int64_t kh = 1, kw = 1;       // kernel size
  int64_t stride = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t oh = 0, ow = 0;  // output size
};

// Output size and padding for "same" (out = ceil(in / stride), TensorFlow's split: the extra
// padding row/column goes at the bottom/right) or "valid" (no padding). Throws
// Error(kInvalidArgument) when the kernel does not fit a valid convolution.
ConvGeometry MakeConvGeometry(int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                              int64_t stride, bool same);

// x is (B, H, W, C); cols is (B*OH*OW, KH*KW*C).
template <typename T>
void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols);

// dx (B, H, W, C) += scatter of cols (B*OH*OW, KH*KW*C).
template <typename T>
void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx);

}  // namespace shardflow::cpu
