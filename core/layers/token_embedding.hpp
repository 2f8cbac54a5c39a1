// Token and learned position embedding, the input layer of a transformer:
//
//   tokens:V:D   input (B, T) of token ids (numbers, as a pipeline writes an int64 feature);
//                output (B, T, D): y[b, t] = table[x[b, t]] + position[t]
//   tokens:V:D:PAD   the same for padded sequences: a sample's padding starts at its first PAD
//                id; every layer after learns where (ForwardContext::lengths): attention
//                never looks at the padding, seqpool:mean averages the positions before it. A
//                sample of padding only counts its first position.
// Parameters table (V, D) and position (T, D), both N(0, 0.02^2) as GPT-2 starts them (T is the
// model's context, fixed by its input shape). A batch may be shorter, (B, T' <= T): it uses the
// first T' positions, and the layers after it run on T' (CheckSequenceInput). Backward: table rows
// and position rows gather dy; an id has no gradient, and dx is 0. An id that is not an integer in
// [0, V) is Error(kInvalidArgument) naming the layer, the sample, the position and the value. CPU
// tensors only (kInvalidArgument otherwise); replicated under tensor parallelism. Thread-safety: as
// every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct TokenEmbeddingOptions {
  int64_t vocabulary = 0;  // V, required (> 0)
  int64_t dim = 0;         // D, required (> 0)
  int64_t pad = -1;        // PAD in [0, V): the padding id; -1: no padding
};

template <typename T>
std::unique_ptr<Layer<T>> MakeTokenEmbedding(const TokenEmbeddingOptions& options);

}  // namespace shardflow
