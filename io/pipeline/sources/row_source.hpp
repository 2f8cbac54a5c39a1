// RowSource: a RecordSource over formats whose records are rows of aligned arrays (HDF5
// datasets, IDX image+label pairs, CSV columns). Shared by hdf5/idx/csv sources.
//
// A file holds `rows` records; record k has the logical offset k * row_bytes (row_bytes: the
// bytes of one row over all its arrays), and FileInfo::size_bytes is rows * row_bytes, so the
// byte_range policy cuts files by rows: a range [b, e) holds rows ceil(b / row_bytes) up to
// ceil(e / row_bytes). Ids (from offsets) are unique per row; where.record is the row index.
// A reader fetches rows in blocks of `block_rows` through the format's loader and slices them;
// elements share the block's storage (the batch stage copies them).
// Thread-safety: Open may run concurrently; the loader must be safe to call concurrently.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/record_index.hpp"

namespace shardflow::pipeline {

// Named arrays whose first dimension is the row.
using RowBlock = std::vector<std::pair<std::string, Tensor>>;

class RowSource : public RecordSource, public RecordIndex {
 public:
  // Rows [begin, end) of file `file_index`.
  using Loader = std::function<RowBlock(size_t file_index, int64_t begin, int64_t end)>;

  // `files[i].num_records` must be set; size_bytes is replaced by num_records * row_bytes[i].
  // REQUIRES: row_bytes[i] > 0.
  RowSource(std::vector<FileInfo> files, std::vector<uint64_t> row_bytes, Loader loader,
            std::string description, int64_t block_rows = 256);

  const std::vector<FileInfo>& Files() const override { return files_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return true; }
  std::string FormatDescription() const override { return description_; }
  std::vector<uint64_t> RecordOffsets(size_t file_index) const override;

 private:
  std::vector<FileInfo> files_;
  std::vector<uint64_t> row_bytes_;
  Loader loader_;
  std::string description_;
  int64_t block_rows_;
};

}  // namespace shardflow::pipeline
