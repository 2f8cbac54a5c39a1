// Multi-head self-attention (Vaswani et al. 2017), as a transformer block uses it:
//
//   attention:H[:causal]   input (B, T, D), D divisible by H; output (B, T, D)
//     qkv = x Wqkv + bqkv         one projection to 3D units, head-major: head h's query, key and
//                                 value are units [3 h dh, 3 (h + 1) dh), dh = D / H
//     o_h = softmax(q_h k_h^T / sqrt(dh) [+ causal mask]) v_h, per head
//     y   = concat_h(o_h) Wo + bo
// Parameters qkv/kernel (D, 3D), qkv/bias (3D), output/kernel (D, D), output/bias (D); the
// kernels start Glorot-uniform, the biases at 0. causal: position t attends to 0..t only (a
// language model); without it every position sees every other (an encoder). Padded sequences
// (ForwardContext::lengths, from tokens:V:D:PAD): no position attends to a key in the padding.
//
// The scores are computed in 64 x 64 tiles with an online softmax (core/cpu/attention.hpp):
// the layer keeps qkv, the heads' outputs and one log-sum-exp per query row for its backward
// pass, never the T x T probabilities, so its activation memory grows linearly in T.
//
// Tensor parallelism (Megatron-LM's split): the heads are divided among the ways. A way holds
// the qkv columns of its heads (column-parallel) and the output rows of its heads
// (row-parallel): one all-reduce of y forward and one of dx backward, and the layer as a whole
// takes and gives whole activations (replicated role). H must be divisible by the ways.
// CPU tensors only (kInvalidArgument otherwise).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct AttentionOptions {
  int64_t heads = 0;  // H, required (> 0)
  bool causal = false;
  InitKind init = InitKind::kGlorotUniform;
};

template <typename T>
std::unique_ptr<Layer<T>> MakeAttention(const AttentionOptions& options);

}  // namespace shardflow
