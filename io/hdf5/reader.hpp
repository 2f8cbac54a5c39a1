// Hdf5Reader: reads rows of HDF5 datasets into Tensors, sharded over the ranks of a communicator.
//
//   Hdf5Reader reader(path, comm);   // comm: e.g. the world communicator
//   // This rank's rows [r*N/P, (r+1)*N/P) of three aligned datasets, read collectively:
//   std::vector<Tensor> shard = reader.ReadGroupShard({"images", "labels", "ids"},
//       {{.dtype = DType::kUInt8, .rank = 3}, {.dtype = DType::kInt64}, {.dtype = DType::kInt64}});
//
// Collective contract: with more than one rank (or Driver::kMpio) and Hdf5Options::collective
// (the default), every rank of the communicator calls every Read*/Sum method in the same order,
// including ranks that own no rows (N < P). A rank whose own request is invalid (rows out of
// range) fails on every rank instead of hanging the others. Errors about the file (missing
// dataset, wrong dtype or rank, misaligned group) are the same on every rank.
//
// Rows move in blocks aligned to the dataset's chunks (see io/hdf5/transfer.hpp), straight into
// the returned tensor: no intermediate copy, no row-by-row calls.
//
// Thread-safety: none (see Hdf5File).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/hdf5/file.hpp"

namespace shardflow::io {

// Rows [begin, end) of a dataset's first dimension.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Rank r of p owns rows [r*n/p, (r+1)*n/p): contiguous, sizes differing by at most one, every
// row owned exactly once; ranks own nothing when n < p. Exact for any n < 2^63 (no overflow).
// REQUIRES: n >= 0, 0 <= rank < size.
RowRange ShardRows(int64_t n, int rank, int size);

// What a caller expects of a dataset; unset fields are not checked. A mismatch is an
// Error(kInvalidArgument) naming the file, the dataset, what was expected and what was found.
struct Hdf5Expect {
  std::optional<DType> dtype;      // e.g. asked float32, file holds int64 -> error
  std::optional<size_t> rank;      // number of dimensions, including the row dimension
  std::optional<Shape> row_shape;  // shape of one row (all dimensions but the first)
};

// Sum of every element of a dataset, for `shardflow-inspect` and tests. Integers are summed
// exactly in int64 (wrapping on overflow), floats in float64.
struct Hdf5Sum {
  DType dtype = DType::kFloat64;
  int64_t elements = 0;
  int64_t int_sum = 0;     // integer datasets
  double float_sum = 0.0;  // float datasets
  bool is_integer() const { return dtype != DType::kFloat32 && dtype != DType::kFloat64; }
  double value() const { return is_integer() ? static_cast<double>(int_sum) : float_sum; }
};

class Hdf5Reader {
 public:
  // Opens `path` read-only on every rank of `comm` (collective). Throws like Hdf5File::Open.
  Hdf5Reader(const std::string& path, Communicator comm, const Hdf5Options& options = {});

  const Hdf5File& file() const { return file_; }
  int rank() const { return file_.rank(); }
  int size() const { return file_.size(); }

  // First dimension of a dataset. Throws kNotFound when absent, kInvalidArgument for a scalar.
  int64_t NumRows(const std::string& dataset) const;
  // The rows this rank owns: ShardRows(NumRows(dataset), rank(), size()).
  RowRange MyShard(const std::string& dataset) const;

  // Rows [begin, end) of `dataset` as a tensor of shape [end-begin, row dims...] and the file's
  // dtype (checked against `expect`). Collective. REQUIRES 0 <= begin <= end <= NumRows.
  Tensor ReadRows(const std::string& dataset, int64_t begin, int64_t end,
                  const Hdf5Expect& expect = {});
  // The same into caller-owned memory (a batch buffer, a reused tensor): `out` must have the
  // dataset's dtype and shape [end-begin, row dims...] (kInvalidArgument otherwise; the check
  // is agreed between ranks like the row range). Collective.
  void ReadRowsInto(const std::string& dataset, int64_t begin, int64_t end, Tensor& out,
                    const Hdf5Expect& expect = {});
  Tensor ReadShard(const std::string& dataset, const Hdf5Expect& expect = {});
  // The whole dataset on every rank (scalars included). Collective.
  Tensor ReadAll(const std::string& dataset, const Hdf5Expect& expect = {});

  // Datasets that describe the same elements (images, labels, ids) must have the same number of
  // rows; returns it, or throws kInvalidArgument naming the file, both datasets and both lengths.
  int64_t GroupRows(const std::vector<std::string>& datasets) const;
  // Rows [begin, end) of each dataset, in order. `expects` is empty or one per dataset.
  std::vector<Tensor> ReadGroupRows(const std::vector<std::string>& datasets, int64_t begin,
                                    int64_t end, const std::vector<Hdf5Expect>& expects = {});
  std::vector<Tensor> ReadGroupShard(const std::vector<std::string>& datasets,
                                     const std::vector<Hdf5Expect>& expects = {});

  // Sum of every element. Collective: each rank sums its shard in blocks (bounded memory), the
  // partial sums are all-reduced, every rank gets the total.
  Hdf5Sum Sum(const std::string& dataset);

 private:
  struct Opened {
    H5Id id;
    Hdf5DatasetInfo info;
  };
  Opened OpenChecked(const std::string& dataset, const Hdf5Expect& expect) const;
  // Rows [begin, end) of the opened dataset into `out`; validates the range and `out`, agreed
  // between ranks before the collective transfers.
  void ReadInto(const Opened& d, const std::string& dataset, int64_t begin, int64_t end,
                Tensor& out);
  int64_t BlockRowsFor(const Hdf5DatasetInfo& info) const;

  Hdf5File file_;
};

}  // namespace shardflow::io
