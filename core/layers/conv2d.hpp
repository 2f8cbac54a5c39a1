// 2-D convolution on NHWC images, computed as im2col + GEMM through the backend (Backend::Im2Col),
// or in one library call where the backend takes it (Backend::ConvForward).
//
// Input (B, H, W, C); kernel (KH, KW, C, F); bias (F); output (B, OH, OW, F). Padding "same"
// (output ceil(H / stride)) or "valid". The batch is processed in chunks so the im2col buffer
// stays bounded (im2col_budget elements, 4 MiB of float by default) whatever the batch size; the
// buffers are allocated once per layer state and reused. 4 MiB since shardflow's own GEMM
// kernel (docs/design.md decision 52), which reads the buffer once instead of packing it: on
// the CNN step (shardflow-bench step, 2026-11-25) 1.05-1.09x the samples/s of 1 MiB at 2
// threads, level at 1 thread; with Eigen's packing kernel 1 MiB (about one core's L2) had been
// best (8 MiB measured 9-16% slower).
//
// Tensor parallelism (core/layers/tensor_parallel.hpp): split = kColumn holds filters (kernel
// and bias) [way * F/T, (way + 1) * F/T) and outputs (B, OH, OW, F/T); kRow takes (B, H, W, C/T)
// (its slice of the channels), holds those input channels of the kernel and the whole bias, and
// sums its output over the ways. Describe() has no marker.
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct Conv2DOptions {
  int64_t filters = 0;  // F, required (> 0)
  int64_t kernel_h = 3, kernel_w = 3;
  int64_t stride = 1;
  bool same_padding = true;  // false: valid
  bool use_bias = true;
  InitKind init = InitKind::kHeNormal;
  TpSplit split = TpSplit::kNone;  // tensor-parallel marker (conv:...:col, conv:...:row)
  // Elements of one im2col chunk (rows of KH*KW*C values, at least one image per chunk);
  // 0: kDefaultIm2ColBudget. Results do not depend on it beyond float rounding.
  int64_t im2col_budget = 0;
};
inline constexpr int64_t kDefaultIm2ColBudget = int64_t{1} << 20;

template <typename T>
std::unique_ptr<Layer<T>> MakeConv2D(const Conv2DOptions& options);

}  // namespace shardflow
