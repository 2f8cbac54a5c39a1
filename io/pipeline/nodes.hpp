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
// when given: -1 dimensions pad to the batch maximum) with `padding_value`.
struct PaddedBatchOptions {
  std::vector<std::pair<std::string, Shape>> padded_shapes;
  double padding_value = 0;
};
NodePtr MakePaddedBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder,
                            const PaddedBatchOptions& options);
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
