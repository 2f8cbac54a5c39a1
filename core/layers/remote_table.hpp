// RemoteTable: a layer's table whose rows live elsewhere (a parameter server's sparse tables,
// apps/train/strategies/parameter_server/sparse_tables.hpp). Built with BuildContext::
// remote_tables, an embedding bag declares its table as an empty slice of the whole (shape
// (0, D) of full shape (N, D): every later parameter keeps its initialisation stream, and a
// checkpoint's table is skipped on load, written by its holders) and computes with a window: the
// rows of the ids one batch names, which the table's holder fills before the forward pass and whose
// gradient rows it reads after the backward pass. The window's gradients start at zero with each
// SetWindow. Thread-safety: as the layer (one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace shardflow {

template <typename T>
class RemoteTable {
 public:
  virtual ~RemoteTable() = default;
  // The layer's spec ("embedbag:1000:16:13:26"), for messages.
  virtual std::string table_spec() const = 0;
  virtual int64_t rows() const = 0;  // N
  virtual int64_t dim() const = 0;   // D
  // Row `id`'s initial values (D of them), exactly as the whole table's Initialize draws them.
  // REQUIRES: Initialize ran (the seed is known).
  virtual void InitialRow(int64_t id, T* out) const = 0;
  // The distinct ids the batch `x` names, sorted; a slot out of range is the forward pass's
  // Error(kInvalidArgument).
  virtual std::vector<int64_t> BatchIds(const Tensor& x) const = 0;
  // Makes `ids` (sorted, distinct) the window and returns its rows, ids.size() x D, for the
  // caller to fill; the window's gradient rows are zeroed. The next forward pass may name
  // only these ids (another is Error(kInternal)).
  virtual T* SetWindow(std::vector<int64_t> ids) = 0;
  virtual const std::vector<int64_t>& window_ids() const = 0;
  virtual T* window_rows() = 0;
  virtual const T* window_grads() const = 0;
};

}  // namespace shardflow
