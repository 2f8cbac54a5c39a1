// Image inputs of shardflow-convert: an IDX images+labels pair or HDF5 datasets, read as the
// records [begin, end) one rank needs.
#pragma once

#include "comm/communicator.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/convert/convert_options.hpp"
#include "core/tensor.hpp"

namespace shardflow::convert {

struct ImageRecords {
  int64_t first = 0;            // global id of images[0]
  Tensor images;                // [n, H, W, C], uint8 or float32 (float64 inputs are narrowed)
  std::vector<int64_t> labels;  // n labels; -1 when the input has none
};

class ImageInput {
 public:
  // Opens the input (collective for HDF5). IDX files are read whole here (they are gzip streams,
  // without random access). Throws Error naming the file (and dataset) on bad input.
  static std::unique_ptr<ImageInput> Open(const ConvertOptions& options, comm::Communicator& comm);
  virtual ~ImageInput() = default;

  int64_t total() const { return total_; }
  const Shape& record_shape() const { return record_shape_; }  // [H, W, C]
  const Shape& stored_shape() const { return stored_shape_; }  // as in the input: [H,W] or [H,W,C]
  DType dtype() const { return dtype_; }                       // uint8 or float32
  // Records [begin, end). Collective for HDF5 (every rank calls it once, maybe empty).
  virtual ImageRecords Read(int64_t begin, int64_t end) = 0;

 protected:
  int64_t total_ = 0;
  Shape record_shape_;
  Shape stored_shape_;
  DType dtype_ = DType::kUInt8;
};

}  // namespace shardflow::convert
