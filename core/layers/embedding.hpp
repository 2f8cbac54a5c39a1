// Embedding layer: one column of a flat input holds a category index, replaced by that row of a
// learned table, so a categorical feature joins the numeric ones as D numbers.
//
//   embedding:N:D:AT   input (B, W) float: column AT holds an index in [0, N) (written as a
//                      number, e.g. by data.assemble = city:index); output (B, W - 1 + D):
//                      columns [0, AT), then table[index] (D values), then columns (AT, W)
// Parameters: table (N, D), Glorot-uniform with fans N and D. Backward: table[index] row of the
// gradient += dy's D values; dx passes the other columns' gradient through and is 0 at AT (an
// index has no gradient). An entry that is not an integer in [0, N) is Error(kInvalidArgument)
// naming the layer, the row and the value. CPU tensors only (kInvalidArgument otherwise); never
// tensor-split (replicated).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct EmbeddingOptions {
  int64_t rows = 0;  // N, required (> 0): the vocabulary with its out-of-vocabulary slot
  int64_t dim = 0;   // D, required (> 0)
  int64_t at = 0;    // the input column holding the index
};

template <typename T>
std::unique_ptr<Layer<T>> MakeEmbedding(const EmbeddingOptions& options);

}  // namespace shardflow
