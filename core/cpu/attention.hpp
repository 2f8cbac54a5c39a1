// Scaled dot-product attention on the CPU, computed in blocks with an online softmax (the
// FlashAttention schedule), so the T x T score matrix never exists: a (query block, key block)
// tile of scores lives in a 64 x 64 scratch, and what a backward pass keeps is the output and
// one log-sum-exp per query row. Activation memory is linear in T.
//
// Layout: qkv holds one row per token (B*T rows, row stride ld_qkv); head h's query, key and
// value are the columns [3 h dh, 3 h dh + dh), [.. + dh, .. + 2 dh), [.. + 2 dh, .. + 3 dh)
// (head-major, so a tensor-parallel way's contiguous slice of the units is whole heads, as
// Megatron-LM lays out its fused QKV projection). The output o is (B*T, H*dh), head h in
// columns [h dh, (h + 1) dh); lse is (B, H, T).
//
//   forward:  o = softmax(q k^T / sqrt(dh) + mask) v per (batch, head); lse = log sum exp of the
//             scaled, masked scores per query row
//   backward: from dout (B*T, H*dh) and what forward saved, dqkv (same layout as qkv,
//             overwritten) by recomputing each tile's probabilities from lse
// causal: query t sees keys 0..t only; lengths: no query sees a key at or past its sequence's
// length. Every query row sees at least one key (key 0).
//
// Threads: the (batch, head) pairs are the pieces of cpu::ParallelFor; each is computed the same
// whichever thread runs it and whatever the thread count (the tiles are a fixed grid), so the
// results do not depend on the number of intra-op threads. Instantiated for float and double.
#pragma once

#include <cstdint>

namespace shardflow::cpu {

struct AttentionShape {
  int64_t batch = 0;
  int64_t time = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t ld_qkv = 0;  // row stride of qkv and dqkv, >= 3 * heads * head_dim
  bool causal = false;
  // Padded sequences: per batch element, the keys before its padding (1..time); the keys from
  // there on are masked for every query. Null: every key counts.
  const int64_t* lengths = nullptr;
};

// The side of the square tiles the score matrix is computed in.
inline constexpr int64_t kAttentionTile = 64;

template <typename T>
void AttentionForward(const AttentionShape& s, const T* qkv, T* o, T* lse);

template <typename T>
void AttentionBackward(const AttentionShape& s, const T* qkv, const T* o, const T* lse,
                       const T* dout, T* dqkv);

}  // namespace shardflow::cpu
