// 2-D convolution on NHWC images, computed as im2col + GEMM (core/cpu/im2col.hpp).
//
// Input (B, H, W, C); kernel (KH, KW, C, F); bias (F); output (B, OH, OW, F). Padding "same"
// (output ceil(H / stride)) or "valid". The batch is processed in chunks so the im2col buffer
// stays bounded (about 8 MiB of float) whatever the batch size.
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
};

template <typename T>
std::unique_ptr<Layer<T>> MakeConv2D(const Conv2DOptions& options);

}  // namespace shardflow
