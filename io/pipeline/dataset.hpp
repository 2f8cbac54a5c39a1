// Dataset: the chainable, tf.data-style face of the pipeline.
//
//   auto plan = PlanShards(source->Files(), source->SupportsByteRanges(), ShardPolicy::kAuto,
//                          world_size, rank);
//   Dataset ds = Dataset::FromRecordSource(source, plan, {.cycle_length = 4,
//                                                         .num_parallel_reads = 4})
//                    .Shuffle({.buffer_elements = 10000, .seed = 42})
//                    .Map(decode, {.name = "decode", .num_parallel_calls = 4})
//                    .Batch(128, /*drop_remainder=*/false)
//                    .Prefetch(2);
//   PipelineIterator it = ds.MakeIterator();
//   Element batch;
//   while (it.Next(&batch)) { ... }
//
// A Dataset is an immutable value (a shared pointer to its last node); every transformation
// returns a new Dataset and never changes the one it is called on. Thread-safety: Datasets may
// be shared between threads; a PipelineIterator belongs to one consumer thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/pipeline/autotune.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/pipeline/shard_policy.hpp"

namespace shardflow::pipeline {

struct IteratorOptions {
  bool autotune = true;  // tune stages created with kAutotune (else they keep start values)
  Autotuner::Options tuner;
};

// The consumer's handle on a running pipeline: elements, state blobs, stats.
class PipelineIterator {
 public:
  // Next element; false at the end. Throws Error naming file, record and stage on failure.
  bool Next(Element* out);
  // The element the next Next() will return, when a read-ahead stage already holds it
  // (Iterator::Peek): never blocks, changes nothing.
  bool Peek(Element* out) { return root_->Peek(out); }
  // A blob for exact resume: version, a hash of the pipeline description, then every stage's
  // state. REQUIRES: no error has been thrown by Next().
  std::string SaveState();
  // REQUIRES: Next() not yet called on this iterator; the blob came from the same pipeline
  // (Error(kInvalidArgument) otherwise; kDataLoss for a damaged blob).
  void RestoreState(const std::string& blob);
  const PipelineStats& stats() const { return *stats_; }
  std::string StatsSummary() const { return stats_->Summary(); }
  // Null when autotune is off.
  const Autotuner* autotuner() const { return tuner_.get(); }

 private:
  friend class Dataset;
  std::shared_ptr<PipelineStats> stats_;
  std::shared_ptr<Autotuner> tuner_;
  NodePtr node_;  // iterators point into the node graph: keep it alive (declared before root_)
  std::unique_ptr<Iterator> root_;
  uint64_t description_hash_ = 0;
};

class Dataset {
 public:
  explicit Dataset(NodePtr node);

  // Rows of in-memory tensors (first dimension = element index). See memory_source.hpp.
  static Dataset FromTensors(std::vector<std::pair<std::string, Tensor>> columns);
  // This rank's records of `source` under `plan`: the plan's units read through an
  // interleave with `reads` (cycle_length 1 and one read thread by default: file order).
  static Dataset FromRecordSource(std::shared_ptr<const RecordSource> source, const ShardPlan& plan,
                                  const InterleaveOptions& reads = {});

  Dataset Shard(int64_t num_shards, int64_t index) const;
  Dataset Filter(Predicate predicate, std::string name = "filter") const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  Dataset Repeat(int64_t count = -1) const;
  Dataset Shuffle(const ShuffleOptions& options) const;
  Dataset ShuffleAndRepeat(const ShuffleOptions& options, int64_t count = -1) const;
  Dataset Map(MapFn fn, const MapOptions& options = {}) const;
  Dataset MapAndBatch(MapFn fn, int64_t batch_size, bool drop_remainder,
                      const MapOptions& options = {}) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset PaddedBatch(int64_t batch_size, bool drop_remainder,
                      const PaddedBatchOptions& options = {}) const;
  Dataset Unbatch() const;
  // tf.data's bucket_by_sequence_length (nodes.hpp BucketOptions).
  Dataset BucketBySequenceLength(const BucketOptions& options) const;
  // Language-model packing of token sequences into blocks (nodes.hpp PackOptions).
  Dataset PackSequences(const PackOptions& options) const;
  Dataset Interleave(DatasetFn fn, const InterleaveOptions& options) const;
  // "" = memory; refill_damaged: a damaged cache file is refilled with a warning, not an error.
  Dataset Cache(const std::string& path = "", bool refill_damaged = false) const;
  Dataset Prefetch(int64_t buffer_size) const;  // kAutotune allowed

  PipelineIterator MakeIterator(const IteratorOptions& options = {}) const;
  const NodePtr& node() const { return node_; }
  std::string Describe() const { return node_->Describe(); }
  int64_t Cardinality() const { return node_->Cardinality(); }

 private:
  NodePtr node_;
};

}  // namespace shardflow::pipeline
