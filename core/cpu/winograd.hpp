// Winograd F(2x2, 5x5) convolutions for the CPU backend (issue 25, docs/design.md decision 58).
//
// A 5 x 5 convolution of stride 1 computes each 2 x 2 block of outputs from a 6 x 6 patch of
// input with 36 multiplications per input/output channel pair instead of 100 (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2015): the patch is transformed
// (V = B^T d B), the kernel too (U = G g G^T, once per call), the 36 products summed over the
// input channels are 36 GEMMs (tiles x C times C x F), and A^T M A gives the 2 x 2 outputs.
// The interpolation points are 0, 1, -1, 2, -2 and infinity; the matrices, checked exactly
// against the direct sum, are in winograd.cpp. The backward pass's input gradient of a "same"
// 5 x 5 convolution is the same computation on dy with the kernel turned 180 degrees and its
// channel axes swapped.
//
// Rounding differs from the direct convolution's (the transforms add and scale before the
// products): the tests bound the difference against a double reference. Each image is computed
// by one thread from the shape alone, so results do not depend on the thread count.
// Thread-safety: every function may be called from any thread. Scratch is per thread and kept
// (bounded: 64 tiles' transforms, one padded image).
#pragma once

#include <cstdint>

#include "core/cpu/im2col.hpp"

namespace shardflow::cpu {

// Whether this path computes a float convolution of geometry g with f filters: a 5 x 5 kernel,
// stride 1, "same" padding (2 rows and columns of zeros on every side), and C and F multiples
// of 8 (the transforms run 8 channels at a time).
bool WinogradApplies(const ConvGeometry& g, int64_t f);
// WinogradApplies to a call of `batch` images under the current choice (core/cpu/
// onednn_conv.hpp's ConvKernel: auto and winograd take it, own and onednn do not), from
// kWinogradMinBatch images: the kernel's transform is paid per call, and at 1-2 images it made
// the CNN's convolution slower than oneDNN's direct kernel (`shardflow-bench conv --batch N`:
// 157 / 233 / 294 / 298 GFLOP/s forward at 1 / 2 / 4 / 8 images, oneDNN 260 / 271 / 274 / 242).
inline constexpr int64_t kWinogradMinBatch = 4;
bool WinogradTakes(const ConvGeometry& g, int64_t f, int64_t batch);

// y (B, H, W, F) = conv(x (B, H, W, C), w (5, 5, C, F)) + bias (F; may be null); overwrites y.
// REQUIRES: WinogradApplies(g, f).
void WinogradConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                         const float* w, const float* bias, float* y);

// dx (B, H, W, C) = the input gradient of that convolution from dy (B, H, W, F); overwrites dx.
// REQUIRES: WinogradApplies(g, f).
void WinogradConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const float* dy,
                              const float* w, float* dx);

// dw (5, 5, C, F) += the kernel gradient from x and dy: dw = G^T [sum over the tiles of
// (B^T d B) * (A dY A^T)] G. The sum is formed per piece of kWinogradImagesPerPiece images on
// one thread each (pieces fixed by the batch alone) and the pieces added in order.
// REQUIRES: WinogradApplies(g, f).
inline constexpr int64_t kWinogradImagesPerPiece = 4;
void WinogradConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                                const float* dy, float* dw);

}  // namespace shardflow::cpu
