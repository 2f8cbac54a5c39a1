// im2col / col2im for NHWC images: the data movement that turns a convolution into one GEMM.
//
// For a window geometry (kernel KH x KW, stride S, padding before PT/PL), Im2Col writes one row
// per output pixel (b, oh, ow) of a batch of images x (B, H, W, C), holding the receptive field
// in (kh, kw, c) order: cols is (B*OH*OW, KH*KW*C), zeros where the window hangs over the
// padding. With the kernel stored (KH, KW, C, F) = (KH*KW*C, F) row-major, cols * kernel is
// the NHWC output (B*OH*OW, F). Col2ImAdd is the adjoint: it scatter-adds rows back into an
// image gradient. The geometry (ConvGeometry, MakeConvGeometry) is the backend seam's,
// core/backend/conv_geometry.hpp.
#pragma once

#include <cstdint>

#include "core/backend/conv_geometry.hpp"

namespace shardflow::cpu {

// x is (B, H, W, C); cols is (B*OH*OW, KH*KW*C).
template <typename T>
void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols);

// dx (B, H, W, C) += scatter of cols (B*OH*OW, KH*KW*C).
template <typename T>
void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx);

}  // namespace shardflow::cpu
