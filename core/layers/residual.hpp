// Residual block (He et al. 2016, "basic block"), NHWC:
//
//   main:     conv 3x3 F (stride s, same) -> batchnorm -> relu -> conv 3x3 F (same) -> batchnorm
//   shortcut: identity, or conv 1x1 F stride s when the shape changes (s != 1 or C != F)
//   y = relu(main(x) + shortcut(x))
//
// Input (B, H, W, C); output (B, ceil(H/s), ceil(W/s), F). Its parameters are named
// conv1/kernel, bn1/gamma, ..., shortcut/kernel inside the block's layer group.
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct ResidualOptions {
  int64_t filters = 0;  // F, required (> 0)
  int64_t stride = 1;
};

template <typename T>
std::unique_ptr<Layer<T>> MakeResidual(const ResidualOptions& options);

}  // namespace shardflow
