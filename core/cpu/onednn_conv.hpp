// oneDNN's convolutions behind the CPU backend (issue 25, docs/design.md decision 53): forward,
// backward data and backward filter of a float NHWC convolution in one call each, taken per
// shape and pass where oneDNN has a direct (non-GEMM) kernel for it; shardflow's im2col + GEMM
// stays the reference twin and the path for everything else (double, shapes oneDNN serves
// through its own GEMM, builds without oneDNN). The same passes in bf16 (ConvData::kBf16) are
// the bf16 precision's convolutions (docs/design.md decision 70).
//
// Layouts are shardflow's: x (B, H, W, C), y (B, OH, OW, F), kernel (KH, KW, C, F), "same"
// padding split as TensorFlow does (im2col.hpp). The kernel is reordered into the layout the
// primitive wants on every call (weights change every step; ~0.1 ms for the CNN's 51k floats);
// in bf16 the reorder rounds it, and each piece rounds its x and dy into per-thread copies.
//
// Threads and bits: a call is cut into pieces of at most kImagesPerPiece images, fixed by the
// batch alone; the pieces run on the intra-op pool (core/cpu/parallel.hpp), each a one-thread
// oneDNN call, and the weight-gradient pieces are added into dw in piece order. So results do
// not depend on the thread count, and a run is repeatable, as with the GEMM path. They differ
// from the GEMM path's in rounding (another summation order).
//
// Choice: SHARDFLOW_CONV = auto (default) | own | onednn | winograd, read on first use, or
// SetConvKernel.
// auto takes oneDNN for a pass when the primitive oneDNN builds for the shape is a direct kernel
// (its implementation name has no "gemm") and, for backward data, the input has at least
// kMinLibraryDataChannels channels: measured with `shardflow-bench conv` (BENCHMARKS.md "oneDNN
// convolutions"). A rule of the shape, not a timing search, so that every rank and every run
// of a job computes with the same kernels (a resumed run reproduces an uninterrupted one).
// Thread-safety: every function may be called from any thread; primitives are built once per
// shape under a lock and executed with per-thread scratch memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu/im2col.hpp"

namespace shardflow::cpu {

// kWinograd: core/cpu/winograd.hpp where it applies (WinogradTakes: the shape, and 4 images or
// more), im2col + GEMM everywhere else, oneDNN never; auto takes Winograd where it applies,
// then oneDNN's direct kernels.
enum class ConvKernel { kAuto, kOwn, kOneDnn, kWinograd };
void SetConvKernel(ConvKernel kernel);
ConvKernel CurrentConvKernel();
const char* ConvKernelName(ConvKernel kernel);
// Whether this build has oneDNN (SHARDFLOW_ONEDNN).
bool OneDnnBuilt();

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

// The numbers a convolution multiplies. kBf16 (the bf16 precision, core/precision/bf16): x, dy
// and the kernel are rounded to bf16 (bf16_round.hpp) and their products summed in float; y, dx
// and dw stay float. oneDNN's bf16 kernels are the only bf16 convolutions (no twin of ours: the
// fallback is im2col + the bf16 GEMM), so auto takes every shape oneDNN builds a primitive for.
enum class ConvData { kFloat, kBf16 };
const char* ConvPassName(ConvPass pass);

inline constexpr int64_t kImagesPerPiece = 16;
inline constexpr int64_t kMinLibraryDataChannels = 8;

// Whether the library computes `pass` of the convolution (g, f filters) on `batch` images under
// the current choice; "" or the oneDNN implementation's name in *impl.
bool LibraryConvTakes(const ConvGeometry& g, int64_t f, int64_t batch, ConvPass pass,
                      std::string* impl = nullptr, ConvData data = ConvData::kFloat);

// Each returns false, touching nothing, when LibraryConvTakes says no.
// y = conv(x, w) + bias (bias may be null); overwrites y.
bool LibraryConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                        const float* w, const float* bias, float* y,
                        ConvData data = ConvData::kFloat);
// dx = the gradient of the input from dy and w; overwrites dx.
bool LibraryConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const float* dy,
                             const float* w, float* dx, ConvData data = ConvData::kFloat);
// dw += the gradient of the kernel from x and dy.
bool LibraryConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                               const float* dy, float* dw, ConvData data = ConvData::kFloat);

}  // namespace shardflow::cpu
