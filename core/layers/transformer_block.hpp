// A pre-LN transformer block (GPT-2's order; Xiong et al. 2020):
//
//   block:H[:causal][:P]   input (B, T, D); output (B, T, D)
//     h = x + drop(attention(layernorm(x)))       (attention:H[:causal], core/layers/attention.hpp)
//     y = h + drop(W2 gelu(W1 layernorm(h) + b1) + b2)   (the MLP: D -> 4D -> D)
// drop: with P > 0, dropout of rate P on each branch before its residual add while training
// (GPT-2's resid_pdrop; core/layers/dropout.hpp, masks of their own per branch).
// Parameters, by prefix: ln1/ (gamma, beta), attention/ (qkv/, output/), ln2/, mlp/fc/ (kernel
// (D, 4D), bias), mlp/proj/ (kernel (4D, D), bias). GELU is the tanh approximation (GPT-2's).
//
// Tensor parallelism, as Megatron-LM splits a block: the attention's heads (attention.hpp), and
// the MLP's hidden units: fc column-parallel, proj row-parallel, so each half of the block costs
// one all-reduce forward and one backward; the layer norms and the residual stream are
// replicated, and the block takes and gives whole activations. H and 4D must be divisible by
// the ways. CPU tensors only.
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct TransformerBlockOptions {
  int64_t heads = 0;  // H, required (> 0)
  bool causal = false;
  double dropout = 0;  // P in [0, 1): residual-branch dropout
};

template <typename T>
std::unique_ptr<Layer<T>> MakeTransformerBlock(const TransformerBlockOptions& options);

}  // namespace shardflow
