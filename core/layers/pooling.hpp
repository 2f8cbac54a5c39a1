// Pooling on NHWC images.
//   MaxPool2D / AvgPool2D: (B, H, W, C) -> (B, OH, OW, C), window k x k, stride s (default k),
//     valid padding: OH = (H - k) / s + 1. Max pooling routes the gradient to the first
//     maximum of each window.
//   GlobalAvgPool: (B, H, W, C) -> (B, C), the mean over all pixels.
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct Pool2DOptions {
  int64_t size = 2;    // window k
  int64_t stride = 0;  // 0: same as size
  bool max = true;     // false: average
};

template <typename T>
std::unique_ptr<Layer<T>> MakePool2D(const Pool2DOptions& options);

template <typename T>
std::unique_ptr<Layer<T>> MakeGlobalAvgPool();

}  // namespace shardflow
