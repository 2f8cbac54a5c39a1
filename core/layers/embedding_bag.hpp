// Embedding bag layer: the sparse features of a click-through or recommendation model. Slots of a
// flat input hold ids (single categorical columns, crosses, multi-valued lists: what
// data.assemble's hash=, id=, a*b:hash= and ids= entries write, io/pipeline/assemble.hpp); the
// slots are grouped into bags, and each bag becomes the combination of its ids' rows of one
// learned table, as tf.nn.embedding_lookup_sparse and torch.nn.EmbeddingBag compute it.
//
//   embedbag:N:D:AT:BAGS[:sum|mean|sqrtn]
//     N      table rows (the assembled id space: the sum of the entries' buckets)
//     D      dimensions
//     AT     the first id slot of the input
//     BAGS   the slots from AT on, as bags: terms joined by '+', each "F" (F bags of one slot)
//            or "FxL" (F bags of L slots): 26+1x8 = 26 single ids, then one list of up to 8
//     combiner  sum (default), mean (divided by the bag's id count), sqrtn (by its square root)
//   input (B, W) float, slot value -1 = no id (a missing value, the unused end of a list);
//   output (B, W - S + F * D), S the slots and F the bags: columns [0, AT), then each bag's D
//   values in order, then the columns after the slots. A bag with no id is D zeros.
// Parameters: table (N, D), normal with stddev 1/sqrt(D) (tf.feature_column.embedding_column's
// scale; element i a pure function of the seed and i, core/init.hpp). Built with
// BuildContext::remote_tables the table is held elsewhere (a parameter server's sparse tables)
// and the layer computes with a window of the batch's rows (core/layers/remote_table.hpp).
// Backward: table[id] += scale * dy of its bag (an id twice in a bag counts twice); dx passes
// the other columns' gradient through and is 0 at the slots (ids have no gradient).
// Ids travel as float32 and are exact integers below 2^24: N is refused above 16,777,216. A slot
// holding anything but -1 or an integer in [0, N) is Error(kInvalidArgument) naming the layer,
// the sample, the slot and the value. CPU tensors only; never tensor-split (replicated).
// Thread-safety: as every layer (layer.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/layers/layer.hpp"

namespace shardflow {

enum class BagCombiner { kSum, kMean, kSqrtN };

struct EmbeddingBagOptions {
  int64_t rows = 0;                // N, required (> 0, <= 2^24)
  int64_t dim = 0;                 // D, required (> 0)
  int64_t at = 0;                  // the first id slot
  std::vector<int64_t> bag_slots;  // one entry per bag: its slot count (>= 1)
  BagCombiner combiner = BagCombiner::kSum;
  // wide:N:K:AT:S, the wide part of a wide-and-deep model (core/model.hpp): one bag of every
  // slot, summed, and the output is that bag alone, (B, K); the table starts at zero.
  bool wide = false;
};

// The largest table an id slot can address exactly (float32 integers).
inline constexpr int64_t kMaxEmbeddingBagRows = int64_t{1} << 24;

// "26+1x8" -> {1 x 26, 8}; throws Error(kInvalidArgument) naming `token`.
std::vector<int64_t> ParseBags(const std::string& text, const std::string& token);
// The inverse: runs of equal slot counts, "26+1x8".
std::string BagsText(const std::vector<int64_t>& bag_slots);

template <typename T>
std::unique_ptr<Layer<T>> MakeEmbeddingBag(const EmbeddingBagOptions& options);

}  // namespace shardflow
