// Dense (fully connected) layer: y = x W + b.
//
// Input (B, ..., F): every leading dimension is treated as batch, so on a sequence (B, T, F)
// the layer is time-distributed (the same W applied at every step). Parameters: kernel (F, U),
// bias (U).
//
// Tensor parallelism (core/layers/tensor_parallel.hpp): split = kColumn holds kernel columns and
// bias [way * U/T, (way + 1) * U/T) and outputs (..., U/T); kRow takes (..., F/T) (its slice of
// the features), holds kernel rows [way * F/T, (way + 1) * F/T) and the whole bias, and sums its
// output over the ways. Describe() has no marker, so a split model's spec is the whole model's.
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct DenseOptions {
  int64_t units = 0;  // U, required (> 0)
  bool use_bias = true;
  InitKind init = InitKind::kHeNormal;  // kernel initialiser; the bias starts at 0
  TpSplit split = TpSplit::kNone;       // tensor-parallel marker (dense:U:col, dense:U:row)
};

template <typename T>
std::unique_ptr<Layer<T>> MakeDense(const DenseOptions& options);

}  // namespace shardflow
