// The geometry of one 2-D convolution over NHWC images, as every backend takes it
// (Backend::Im2Col, ConvForward, ...): device-neutral, so the backend seam names no device's
// types. How a device computes a convolution (the CPU's im2col + GEMM, oneDNN or Winograd,
// core/cpu; cuDNN, core/cuda) is that backend's own business.
// Thread-safety: plain values.
#pragma once

#include <cstdint>

namespace shardflow {

// Input (H, W, C), kernel KH x KW, stride S, padding before the first row and column
// (PT, PL), output (OH, OW).
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

}  // namespace shardflow
