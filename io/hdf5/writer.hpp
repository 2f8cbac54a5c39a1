// Hdf5Writer: many ranks write one HDF5 file together, each its own rows.
//
//   Hdf5Writer writer(path, comm);                        // creates (truncates) the file
//   writer.CreateDataset("images", DType::kUInt8, {n, 28, 28}, {.chunk_rows = 100, .gzip_level =
//   4}); RowRange mine = ShardRows(n, rank, size); writer.WriteRows("images", mine.begin,
//   my_images);    // shape [mine.size(), 28, 28]
//
// Collective contract: every rank calls CreateDataset with the same arguments (the global
// shape, not its part) and WriteRows for each dataset the same number of times, ranks with no
// rows included (pass an empty tensor of shape [0, row dims...] or any tensor with 0 rows).
// Ranks write disjoint rows; overlapping writes leave either rank's values. Compressed
// (gzip) datasets are written collectively too, which parallel HDF5 supports from 1.10.2.
// The file is complete when the writer is destroyed or Close() returns (collective).
//
// Thread-safety: none (see Hdf5File).
#pragma once

#include <memory>
#include <string>

#include "io/hdf5/file.hpp"

namespace shardflow::io {

struct Hdf5DatasetOptions {
  // Rows per chunk; 0 stores the dataset contiguously (only without compression). Larger
  // chunks compress better and read faster in bulk; smaller ones waste less when reading a
  // few rows. Readers align their blocks to these chunks.
  int64_t chunk_rows = 0;
  // Deflate (gzip) level 1..9, 0 for none. Needs chunk_rows > 0.
  int gzip_level = 0;
  // Byte shuffle before deflate (helps floats and wide integers compress).
  bool shuffle = false;
};

class Hdf5Writer {
 public:
  // Creates `path` (replacing it) on every rank of `comm`. Collective.
  Hdf5Writer(const std::string& path, Communicator comm, const Hdf5Options& options = {});
  ~Hdf5Writer() = default;

  const Hdf5File& file() const { return *file_; }

  // Creates dataset `name` (groups in the path are created as needed) with the global shape.
  // Throws kInvalidArgument on bad options (gzip without chunks, chunk larger than the data is
  // fine: HDF5 allows chunks past the end only for extensible datasets, so chunk_rows is
  // capped at the row count). Collective.
  void CreateDataset(const std::string& name, DType dtype, const Shape& shape,
                     const Hdf5DatasetOptions& options = {});

  // Writes `rows` (shape [k, row dims...], the dataset's dtype) at rows [first_row, first_row+k).
  // Collective. Throws kInvalidArgument naming the dataset when the dtype or row shape differs
  // or the rows fall outside the dataset (on every rank: ranks agree before writing).
  void WriteRows(const std::string& name, int64_t first_row, const Tensor& rows);

  // Flushes and closes the file. Collective. Further calls throw.
  void Close();

 private:
  std::unique_ptr<Hdf5File> file_;
};

}  // namespace shardflow::io
