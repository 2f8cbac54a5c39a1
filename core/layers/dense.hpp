// Dense (fully connected) layer: y = x W + b.
//
// Input (B, ..., F): every leading dimension is treated as batch, so on a sequence (B, T, F)
// the layer is time-distributed (the same W applied at every step). Parameters: kernel (F, U),
// bias (U).
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct DenseOptions {
  int64_t units = 0;  // U, required (> 0)
  bool use_bias = true;
  InitKind init = InitKind::kHeNormal;  // kernel initialiser; the bias starts at 0
};

template <typename T>
std::unique_ptr<Layer<T>> MakeDense(const DenseOptions& options);

}  // namespace shardflow
