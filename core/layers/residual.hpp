// Residual blocks (He et al. 2016), NHWC.
//
// Basic block (residual:F[:S]):
//   main:     conv 3x3 F (stride s, same) -> batchnorm -> relu -> conv 3x3 F (same) -> batchnorm
//   shortcut: identity, or conv 1x1 F stride s when the shape changes (s != 1 or C != F)
//   y = relu(main(x) + shortcut(x)); output (B, ceil(H/s), ceil(W/s), F)
// Bottleneck block (bottleneck:F[:S], ResNet-50 v1.5 as torchvision builds it: the stride on
// the 3x3, convolutions without bias, each followed by a batchnorm):
//   main:     conv 1x1 F -> bn -> relu -> conv 3x3 F (stride s, same) -> bn -> relu
//             -> conv 1x1 4F -> bn
//   shortcut: identity, or conv 1x1 4F stride s -> bn when the shape changes (s != 1 or C != 4F)
//   y = relu(main(x) + shortcut(x)); output (B, ceil(H/s), ceil(W/s), 4F)
//
// Input (B, H, W, C). Parameters are named conv1/kernel, bn1/gamma, ..., shortcut/kernel (and
// the bottleneck's shortcut_bn/gamma) inside the block's layer group.
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct ResidualOptions {
  int64_t filters = 0;  // F, required (> 0)
  int64_t stride = 1;
  bool bottleneck = false;  // the bottleneck block instead of the basic one
};

template <typename T>
std::unique_ptr<Layer<T>> MakeResidual(const ResidualOptions& options);

}  // namespace shardflow
