#include "io/pipeline/batch_buffer.hpp"

#include <cstring>

#include "io/pipeline/block_pool.hpp"

namespace shardflow::pipeline {

void BatchBuffer::Allocate(const Element& first, int64_t batch_size) {
  batch_ = Element();
  batch_.id = first.id;
  batch_.where = first.where;
  for (const auto& [name, t] : first.features) {
    Shape shape = t.shape();
    shape.insert(shape.begin(), batch_size);
    // Not zero-filled: every row handed out is placed (Finish gives the first rows only).
    batch_.features.emplace_back(name, PooledTensor(t.dtype(), shape));
  }
  batch_size_ = batch_size;
  allocated_ = true;
}

void BatchBuffer::Place(int64_t slot, const Element& element) {
  if (element.features.size() != batch_.features.size()) {
    ErrorContext ctx = element.where.Context();
    ctx.hint = "every element of a batch needs the same features";
    throw Error(ErrorCode::kInvalidArgument,
                "batch: element has " + std::to_string(element.features.size()) +
                    " features, the batch has " + std::to_string(batch_.features.size()),
                ctx);
  }
  if (slot == 0) {
    batch_.id = element.id;
    batch_.where = element.where;
  }
  for (size_t i = 0; i < batch_.features.size(); ++i) {
    const auto& [name, dst] = batch_.features[i];
    const Tensor& src =
        element.features[i].first == name ? element.features[i].second : element.Get(name);
    Shape want(dst.shape().begin() + 1, dst.shape().end());
    if (src.dtype() != dst.dtype() || src.shape() != want) {
      ErrorContext ctx = element.where.Context();
      ctx.key = name;
      const bool strings = src.dtype() == DType::kUInt8 && dst.dtype() == DType::kUInt8 &&
                           src.rank() == 1 && want.size() == 1;
      ctx.hint = strings ? "'" + name +
                               "' holds strings (or bytes) of varying length: a model reads them "
                               "through [data] assemble = " +
                               name +
                               ":onehot (or :index); a column nothing reads can be left out of "
                               "csv_columns (or features)"
                         : "give every record one shape: images of several sizes take [data] "
                           "augmentations = resize:HxW (or random_crop:HxW); in the Dataset API, "
                           "PaddedBatch pads";
      throw Error(ErrorCode::kInvalidArgument,
                  "batch: feature '" + name + "' is " + DTypeName(src.dtype()) +
                      ShapeToString(src.shape()) + " but the batch holds " +
                      DTypeName(dst.dtype()) + ShapeToString(want),
                  ctx);
    }
    const size_t row = src.byte_size();
    if (row > 0) {
      std::memcpy(static_cast<char*>(batch_.features[i].second.raw_data()) + slot * row,
                  src.raw_data(), row);
    }
  }
}

void BatchBuffer::AllocateFrom(const Element& partial, int64_t batch_size) {
  batch_ = Element();
  batch_.id = partial.id;
  batch_.where = partial.where;
  for (const auto& [name, t] : partial.features) {
    Shape shape = t.shape();
    shape.at(0) = batch_size;
    Tensor full = PooledTensor(t.dtype(), shape);
    if (t.byte_size() > 0) std::memcpy(full.raw_data(), t.raw_data(), t.byte_size());
    batch_.features.emplace_back(name, std::move(full));
  }
  batch_size_ = batch_size;
  allocated_ = true;
}

Element BatchBuffer::Finish(int64_t rows) const {
  Element out = batch_;
  if (rows < batch_size_) {
    for (auto& [name, t] : out.features) t = t.Slice(0, rows);
  }
  return out;
}

}  // namespace shardflow::pipeline

namespace shardflow::pipeline {

Element BatchBuffer::FinishWithout(int64_t rows, const std::vector<int64_t>& dropped) {
  if (dropped.empty()) return Finish(rows);
  for (auto& [name, t] : batch_.features) {
    const size_t row = t.num_elements() == 0 ? 0 : t.byte_size() / static_cast<size_t>(batch_size_);
    char* base = static_cast<char*>(t.raw_data());
    int64_t kept = 0;
    size_t next = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (next < dropped.size() && dropped[next] == r) {
        ++next;
        continue;
      }
      if (kept != r && row > 0) std::memmove(base + kept * row, base + r * row, row);
      ++kept;
    }
  }
  return Finish(rows - static_cast<int64_t>(dropped.size()));
}

}  // namespace shardflow::pipeline
