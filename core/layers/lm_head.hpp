// The language-model head tied to the token embedding (GPT-2's; Press & Wolf 2017):
//
//   lmhead   input (B, T, D); output (B, T, V): logits = h E^T
//
// with E the model's tokens:V:D table (V, D): the same matrix turns ids into vectors and
// vectors back into scores over the ids, so a head costs no parameters of its own (V x D fewer
// than dense:V; for GPT-2 small, 38.6M of its 124M). Backward adds h^T dy to the table's
// gradient beside the embedding's own, and dx = dy E. The tokens layer must be in the same
// part of the model: a pipeline stage boundary between them is Error(kInvalidArgument) naming
// the layer (the table would live on another rank), as is a model without one. Tensor
// parallelism leaves it replicated (the table is). A batch shorter than the context runs on
// its length (CheckSequenceInput).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

template <typename T>
std::unique_ptr<Layer<T>> MakeLmHead();

}  // namespace shardflow
