// Iterator and DatasetNode: the pull-based core of the input pipeline (docs/design.md decision 4).
//
// A DatasetNode is an immutable description of one stage (source, map, shuffle, ...) that holds
// its input node(s). MakeIterator() creates a fresh pass over the data; the consumer calls
// Next() on the returned iterator, which pulls from its input iterator. Sequential stages do
// their work on the caller's thread; parallel stages (parallel map, map-and-batch, prefetch,
// parallel interleave reads) own bounded buffers and worker threads that start on the first
// Next() and stop in the destructor.
//
// Errors: Next() throws shardflow::Error. The stage where a failure originates puts the file,
// record and stage name on it; stages above pass it through unchanged, and parallel stages hand
// it from the worker to the consumer's thread in element order. After an error, Next() keeps
// throwing the same error. Destroying an iterator at any time (mid-epoch, after an error) stops
// its threads and never hangs.
//
// State: Save() writes the iterator's position (input state, buffered elements, RNG counters,
// epoch) so that Restore() on a fresh iterator of the same pipeline resumes exactly. Restore()
// REQUIRES: called before the first Next() of that iterator.
// Thread-safety: one consumer thread per iterator.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "io/pipeline/element.hpp"
#include "io/pipeline/iterator_state.hpp"
#include "io/pipeline/stage_stats.hpp"

namespace shardflow::pipeline {

class Autotuner;

struct IteratorContext {
  std::shared_ptr<PipelineStats> stats = std::make_shared<PipelineStats>();
  int64_t epoch = 0;  // which pass over the data this iterator serves (repeat counts them)
  // Parallel stages created with kAutotune register their knobs here; null: no tuning
  // (kAutotune stages then run at their starting values).
  std::shared_ptr<Autotuner> autotuner;
};

class Iterator {
 public:
  virtual ~Iterator() = default;
  // Writes the next element into *out and returns true, or returns false at the end.
  virtual bool Next(Element* out) = 0;
  virtual void Save(StateWriter* writer) = 0;
  virtual void Restore(StateReader* reader) = 0;
  // Never blocks and consumes nothing: writes into *out the element the next Next() will
  // return and returns true when a stage that reads ahead (prefetch) already holds it; false
  // when none is ready or the stages cannot tell. The copy shares the element's tensors, so a
  // consumer can start work on its next element early (apps/train/device_input.hpp uploads it
  // to a GPU) while the state a checkpoint saves is unchanged.
  virtual bool Peek(Element* /*out*/) { return false; }
};

class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  // REQUIRES: this node outlives the iterator (iterators refer to their node's settings).
  virtual std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const = 0;
  // A one-line description of this stage and its inputs, including everything that determines
  // the output (file names, sizes and mtimes for file sources). Cache keys and state blobs are
  // tagged with its hash.
  virtual std::string Describe() const = 0;
  // Elements per pass when known without reading (in-memory sources, take, batch of those).
  virtual int64_t Cardinality() const { return kUnknownCardinality; }
  static constexpr int64_t kUnknownCardinality = -1;
  static constexpr int64_t kInfiniteCardinality = -2;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// Base for stages that run on the consumer's thread: Next() times NextImpl() and charges the
// part spent inside Pull() to input-wait, the rest to busy. Cheap calls (a row of a CSV file
// takes well under a microsecond per stage) are timed one in kSamplePeriod, each timed call
// standing for kSamplePeriod: reading the clock four times per stage per element was 16% of a
// CSV pipeline's time. Calls of 10 us or more (a batch) are all timed, their pulls sampled the
// same way. Element and byte counts are exact; they reach the shared counters at most
// kSamplePeriod calls late, and at the end.
class SequentialIterator : public Iterator {
 public:
  SequentialIterator(const IteratorContext& ctx, const std::string& stage_name)
      : stats_(ctx.stats->Add(stage_name)) {}
  ~SequentialIterator() override { Flush(); }
  bool Next(Element* out) final;
  static constexpr int64_t kSamplePeriod = 16;

 protected:
  virtual bool NextImpl(Element* out) = 0;
  // Pulls from `input`, counting the time as input wait.
  bool Pull(Iterator* input, Element* out);
  StageStats& stats() { return *stats_; }

 private:
  void Flush();

  std::shared_ptr<StageStats> stats_;
  int64_t wait_ns_ = 0;  // input wait of the call being timed (estimated: pulls are sampled)
  int64_t pulls_ = 0;    // pulls in the call being timed
  int64_t weight_ = 0;   // what the call being timed stands for (0: not timed)
  int64_t calls_ = 0;
  int64_t last_call_ns_ = 0;  // the last timed call's duration
  int64_t pending_elements_ = 0, pending_bytes_ = 0;
  std::exception_ptr error_;
};

// 64-bit FNV-1a, used for description hashes (cache keys, state tags).
uint64_t HashString(const std::string& text);

// Element ids of file sources: the file's index in the high bits, the record's byte offset
// (or row index, for formats without byte offsets) in the low 40 bits.
inline int64_t MakeElementId(int64_t file_index, uint64_t offset) {
  return (file_index << 40) | static_cast<int64_t>(offset & ((uint64_t{1} << 40) - 1));
}

}  // namespace shardflow::pipeline
