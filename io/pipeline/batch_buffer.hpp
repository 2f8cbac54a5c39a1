// BatchBuffer: the output tensors of one batch, filled slot by slot.
//
// Allocated from the first element placed (each feature gets shape [batch_size, ...element
// shape]); Place() copies an element's features into row `slot` and checks that the element
// has the same features, dtypes and shapes as the first (Error(kInvalidArgument) naming the
// feature, both shapes and the element's file/record otherwise). Finish(n) returns the batch
// of the first n rows (a view of the same storage when n < batch_size); FinishWithout(n, d)
// the same without rows d. The tensors come from the block pool (block_pool.hpp): big batches
// reuse freed ones' memory.
// Thread-safety: Place() of distinct slots may run concurrently once the buffer is allocated
// (the fused map-and-batch does this); Allocate() and Finish() need exclusive access.
#pragma once

#include <vector>

#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

class BatchBuffer {
 public:
  BatchBuffer() = default;
  bool allocated() const { return allocated_; }
  void Allocate(const Element& first, int64_t batch_size);
  // Slot 0 also gives the batch its id and provenance (whatever element allocated it).
  void Place(int64_t slot, const Element& element);
  Element Finish(int64_t rows) const;
  // Finish(rows) without the rows in `dropped` (ascending, each < rows): the rows after a
  // dropped one move up, in order. Moves rows within the buffer (call it once, last).
  Element FinishWithout(int64_t rows, const std::vector<int64_t>& dropped);
  // Rebuilds a buffer from Finish(rows) of an earlier one (iterator state restore).
  void AllocateFrom(const Element& partial, int64_t batch_size);

 private:
  bool allocated_ = false;
  int64_t batch_size_ = 0;
  Element batch_;  // id/provenance of the first element
};

}  // namespace shardflow::pipeline
