// Node factories: one per transformation, each implemented in its own file (map.cpp,
// shuffle.cpp, ...). Dataset (dataset.hpp) is the friendly, chainable face of these; use the
// factories directly to build nodes around custom DatasetNode implementations.
// Every factory validates its arguments and throws Error(kInvalidArgument) naming the stage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/pipeline/iterator.hpp"

namespace shardflow::pipeline {

// ---- selection (shard.cpp, filter.cpp, take_skip.cpp) ----
// Keeps elements index, index+num, index+2num, ... of each pass (tf.data shard).
NodePtr MakeShardNode(NodePtr input, int64_t num_shards, int64_t index);
using Predicate = std::function<bool(const Element&)>;
NodePtr MakeFilterNode(NodePtr input, Predicate predicate, std::string name);
NodePtr MakeTakeNode(NodePtr input, int64_t count);  // count < 0: all
NodePtr MakeSkipNode(NodePtr input, int64_t count);

// ---- repeat.cpp ----  count < 0: forever. An epoch that yields nothing ends the stream
// (instead of spinning forever on an empty input).
NodePtr MakeRepeatNode(NodePtr input, int64_t count);

// ---- shuffle.cpp ----
struct ShuffleOptions {
  int64_t buffer_elements = 10000;          // the shuffle window; larger = closer to a full shuffle
  int64_t buffer_bytes = int64_t{1} << 30;  // also bounded by bytes: whichever comes first
  uint64_t seed = 0;
  bool reshuffle_each_iteration = true;  // a new order each epoch (seed, epoch)
};
NodePtr MakeShuffleNode(NodePtr input, const ShuffleOptions& options);
// Shuffle fused with repeat(count): when epoch e's input ends, epoch e+1's input starts filling
// the buffer while epoch e's remaining elements drain (no empty-buffer stall at the boundary;
// like tf.data, elements of adjacent epochs mix in the window).
NodePtr MakeShuffleAndRepeatNode(NodePtr input, const ShuffleOptions& options, int64_t count);

// ---- map.cpp, parallel_map.cpp ----
struct MapContext {
  int64_t epoch = 0;  // for counter-based random ops keyed by (seed, epoch, element id)
};
// Transforms one element in place. May throw; the error gets the stage name and provenance.
// Must be safe to call concurrently from several threads (it gets distinct elements).
using MapFn = std::function<void(Element& element, const MapContext& ctx)>;
constexpr int kAutotune = -1;
struct MapOptions {
  std::string name = "map";
  int num_parallel_calls = 0;         // 0: on the consumer thread; n: n workers; kAutotune
  bool deterministic = true;          // false: hand out whichever element finishes first
  int64_t max_buffered_elements = 0;  // 0: 8 * workers + 2
  int64_t max_buffered_bytes = int64_t{256} << 20;
  // map_and_batch only. Set: an element whose fn fails with Error(kDataLoss) (a corrupt or
  // truncated image) is dropped from its batch and handed to this function (which counts and
  // logs it) instead of failing the pass; its batch has one row fewer (the rows after it move
  // up), so every pass still yields the same number of batches. A batch whose every element
  // is dropped fails. Called from worker threads, concurrently.
  std::function<void(const Error& error)> on_data_loss;
};
NodePtr MakeMapNode(NodePtr input, MapFn fn, const MapOptions& options);

// ---- prefetch.cpp ----  buffer_size elements (kAutotune: tuned) read ahead by one thread.
NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_size,
                         int64_t max_bytes = int64_t{512} << 20);

// ---- batch.cpp ----
// Stacks `batch_size` elements: each feature gets a leading dimension. Shapes must agree
// (Error naming the feature and element otherwise). The batch keeps the first element's id.
NodePtr MakeBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder);
// Like batch, padding every feature to the largest shape in the batch (or to `padded_shapes`
// when given: -1 dimensions pad to the batch maximum) with `padding_value`, or the feature's
// own in `padding_values` (tf.data's padded_batch). Each feature named in `masks` also gets
// NAME_mask, uint8 of its padded shape: 1 where the element's values are, 0 in the padding.
struct PaddedBatchOptions {
  std::vector<std::pair<std::string, Shape>> padded_shapes;
  double padding_value = 0;
  std::vector<std::pair<std::string, double>> padding_values;  // per feature, over padding_value
  std::vector<std::string> masks;
};
NodePtr MakePaddedBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder,
                            const PaddedBatchOptions& options);
// The padding options as text, for Describe().
std::string PaddingText(const PaddedBatchOptions& options);
// The batch padded_batch makes of `elements` (at least one); errors name `stage` and the
// element whose feature is missing, or changes rank or dtype, or outgrows its padded shape.
Element PadAndStack(const std::vector<Element>& elements, const PaddedBatchOptions& options,
                    const std::string& stage);
// ---- bucket_by_length.cpp ----
// tf.data's bucket_by_sequence_length: element i goes to bucket k when boundaries[k-1] <=
// length < boundaries[k] (bucket 0 below boundaries[0], the last at or above the last
// boundary), a bucket that holds batch_sizes[k] elements is padded and batched (PadAndStack),
// and at the input's end the partial buckets follow in bucket order (none under
// drop_remainder). The length is the int scalar `length_feature`, or its first dimension when
// it has one. pad_to_bucket_boundary pads each `sequence_features` feature's first dimension
// to boundaries[k] - 1 (an element of the last bucket is then an error, as in tf.data).
// Elements keep their order within a bucket; the batch has the id of its first element.
struct BucketOptions {
  std::string length_feature = "length";
  std::vector<int64_t> boundaries;   // strictly increasing, >= 1
  std::vector<int64_t> batch_sizes;  // boundaries.size() + 1 of them, each >= 1
  bool pad_to_bucket_boundary = false;
  std::vector<std::string> sequence_features;  // padded to the boundary (pad_to_bucket_boundary)
  bool drop_remainder = false;
  PaddedBatchOptions padding;
};
NodePtr MakeBucketBySequenceLengthNode(NodePtr input, const BucketOptions& options);
// The bucket of `length` (index into batch_sizes).
int64_t BucketOf(const std::vector<int64_t>& boundaries, int64_t length);
// Batches one pass yields for these per-bucket element counts (a partial bucket is a batch
// unless drop_remainder): what step counting needs, whatever the element order.
int64_t BucketedBatches(const BucketOptions& options, const std::vector<int64_t>& per_bucket);
// ---- pack_sequences.cpp ----
// GPT-style language-model packing (io/text/lm_packing.hpp's rule on a stream): the documents'
// int64 token ids [n] (`feature`), each followed by end_id (none when < 0), joined into one
// stream and cut into blocks: element b is `input` = stream[bT, bT + T), `target` = stream[bT +
// 1, bT + T + 1), int64 [T]. The tail no block covers is dropped; a pass over documents of S
// stream tokens in all yields PackedBlocksOf(S, T) = (S - 1) / T blocks, whatever their order.
// A block has the id and provenance of the document its first token comes from (a long document
// gives several blocks its id).
struct PackOptions {
  std::string feature = "tokens";
  int64_t block = 0;  // T >= 1
  int64_t end_id = -1;
  std::string input = "input", target = "target";
};
NodePtr MakePackSequencesNode(NodePtr input, const PackOptions& options);
int64_t PackedBlocksOf(int64_t stream_tokens, int64_t block);
// Splits each feature along its first dimension (all features must agree on it). Element i
// of a batch gets id batch.id + i.
NodePtr MakeUnbatchNode(NodePtr input);
// map + batch fused: workers run fn and copy each element straight into its slot of the batch
// buffer (element k goes to batch k / batch_size, slot k % batch_size); no per-element queue.
NodePtr MakeMapAndBatchNode(NodePtr input, MapFn fn, int64_t batch_size, bool drop_remainder,
                            const MapOptions& options);

// ---- interleave.cpp ----
struct InterleaveOptions {
  int64_t cycle_length = 1;         // inputs open at once
  int64_t block_length = 1;         // consecutive elements taken from one input before moving on
  int num_parallel_reads = 1;       // > 1: each open input reads ahead on its own thread
  bool deterministic = true;        // false: skip an input that has nothing ready
  int64_t read_ahead_elements = 0;  // per open input when parallel; 0: 16 + 2 * block_length
};
using DatasetFn = std::function<NodePtr(const Element&)>;
NodePtr MakeInterleaveNode(NodePtr input, DatasetFn fn, const InterleaveOptions& options);

// ---- cache.cpp ----  path empty: in memory. Otherwise a file cache at `path`, reused across
// runs while the input's description (file names, sizes, mtimes, stages) is unchanged. A
// damaged cache file fails the pass (kDataLoss), or is refilled with a warning when
// `refill_damaged`.
NodePtr MakeCacheNode(NodePtr input, const std::string& path, bool refill_damaged = false);
// Rank `rank`'s cache file of the cache `path` in a job of `num_ranks`: "PATH.rankR-of-N".
std::string RankCacheFile(const std::string& path, int rank, int num_ranks);

}  // namespace shardflow::pipeline
