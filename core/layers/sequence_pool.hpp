// Pooling a sequence into one vector per sample, the head of a sequence classifier:
//
//   seqpool:mean    input (B, T, D); output (B, D), the mean over the T positions (over those
//                   before the padding of padded sequences: ForwardContext::lengths)
//   seqpool:first   input (B, T, D); output (B, D), position 0 (BERT's [CLS] token)
// No parameters. Slice-wise under tensor parallelism (each feature pools alone).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

enum class SequencePoolKind { kMean, kFirst };

template <typename T>
std::unique_ptr<Layer<T>> MakeSequencePool(SequencePoolKind kind);

}  // namespace shardflow
