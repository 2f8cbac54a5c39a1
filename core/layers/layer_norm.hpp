// Layer normalisation over the last dimension (transformers' normalisation; Ba et al. 2016):
// each row of F features is normalised by its own mean and (biased) variance, then scaled and
// shifted per feature: y = gamma * (x - mean) / sqrt(var + epsilon) + beta. The same in
// training and inference (no running statistics, no batch dependence).
//
//   layernorm   input (B, ..., F); output the same shape
// Parameters gamma (F, starts at 1) and beta (F, starts at 0), no weight decay. epsilon 1e-5
// (PyTorch's LayerNorm default). The statistics are taken in double. CPU tensors only
// (kInvalidArgument otherwise); replicated under tensor parallelism (it needs whole rows).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct LayerNormOptions {
  double epsilon = 1e-5;
};

template <typename T>
std::unique_ptr<Layer<T>> MakeLayerNorm(const LayerNormOptions& options);

}  // namespace shardflow
