#include "io/hdf5/reader.hpp"

#include <algorithm>

#include "core/check_hdf5.hpp"
#include "io/hdf5/transfer.hpp"

namespace shardflow::io {

RowRange ShardRows(int64_t n, int rank, int size) {
  // floor(r*n/p) without forming r*n: with n = q*p + rem, r*n/p = r*q + r*rem/p, and
  // r*rem < p*p fits easily.
  const int64_t p = size;
  const int64_t q = n / p;
  const int64_t rem = n % p;
  auto start = [&](int64_t r) { return r * q + (r * rem) / p; };
  return {start(rank), start(rank + 1)};
}

Hdf5Reader::Hdf5Reader(const std::string& path, Communicator comm, const Hdf5Options& options)
    : file_(Hdf5File::Open(path, comm, options)) {}

Hdf5Reader::Opened Hdf5Reader::OpenChecked(const std::string& dataset,
                                           const Hdf5Expect& expect) const {
  Opened d;
  d.id = file_.OpenDataset(dataset);
  d.info = DescribeDataset(d.id.get(), dataset, file_.path());
  const ErrorContext ctx{.file = file_.path(), .key = dataset};
  if (!d.info.dtype) {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + dataset + "' has type " + d.info.type_name +
                    ", which has no tensor dtype (uint8, int32, int64, float32, float64)",
                ctx);
  }
  if (expect.dtype && *expect.dtype != *d.info.dtype) {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + dataset + "': expected dtype " + DTypeName(*expect.dtype) +
                    ", found " + d.info.type_name,
                ctx);
  }
  if (expect.rank && *expect.rank != d.info.shape.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + dataset + "': expected rank " + std::to_string(*expect.rank) +
                    ", found rank " + std::to_string(d.info.shape.size()) + " (shape " +
                    ShapeToString(d.info.shape) + ")",
                ctx);
  }
  if (expect.row_shape) {
    const Shape found =
        d.info.shape.empty() ? Shape{} : Shape(d.info.shape.begin() + 1, d.info.shape.end());
    if (d.info.shape.empty() || found != *expect.row_shape) {
      throw Error(ErrorCode::kInvalidArgument,
                  "dataset '" + dataset + "': expected rows of shape " +
                      ShapeToString(*expect.row_shape) + ", found dataset shape " +
                      ShapeToString(d.info.shape),
                  ctx);
    }
  }
  return d;
}

int64_t Hdf5Reader::BlockRowsFor(const Hdf5DatasetInfo& info) const {
  int64_t row_elems = 1;
  for (size_t i = 1; i < info.shape.size(); ++i) row_elems *= info.shape[i];
  const int64_t chunk_rows = info.chunk.empty() ? 1 : info.chunk[0];
  return internal::BlockRows(row_elems * static_cast<int64_t>(DTypeSize(*info.dtype)), chunk_rows,
                             file_.options().block_bytes);
}

int64_t Hdf5Reader::NumRows(const std::string& dataset) const {
  const Hdf5DatasetInfo info = file_.Describe(dataset);
  if (info.shape.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + dataset + "' is a scalar; it has no rows to read or shard",
                {.file = file_.path(), .key = dataset});
  }
  return info.shape[0];
}

RowRange Hdf5Reader::MyShard(const std::string& dataset) const {
  return ShardRows(NumRows(dataset), rank(), size());
}

Tensor Hdf5Reader::ReadRows(const std::string& dataset, int64_t begin, int64_t end,
                            const Hdf5Expect& expect) {
  Opened d = OpenChecked(dataset, expect);
  Shape shape = d.info.shape;
  const bool valid = !shape.empty() && 0 <= begin && begin <= end && end <= shape[0];
  if (valid) shape[0] = end - begin;
  // An invalid request gets a placeholder; ReadInto reports it on every rank.
  Tensor out(*d.info.dtype, valid ? shape : Shape{0});
  ReadInto(d, dataset, begin, end, out);
  return out;
}

void Hdf5Reader::ReadRowsInto(const std::string& dataset, int64_t begin, int64_t end, Tensor& out,
                              const Hdf5Expect& expect) {
  Opened d = OpenChecked(dataset, expect);
  ReadInto(d, dataset, begin, end, out);
}

void Hdf5Reader::ReadInto(const Opened& d, const std::string& dataset, int64_t begin, int64_t end,
                          Tensor& out) {
  if (d.info.shape.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "dataset '" + dataset + "' is a scalar; read it with ReadAll",
                {.file = file_.path(), .key = dataset});
  }
  const int64_t n = d.info.shape[0];
  Status local;
  Shape shape = d.info.shape;
  shape[0] = end - begin;
  if (begin < 0 || begin > end || end > n) {
    local = Status(ErrorCode::kInvalidArgument,
                   "rows [" + std::to_string(begin) + "," + std::to_string(end) +
                       ") are outside dataset '" + dataset + "' of " + std::to_string(n) + " rows",
                   {.file = file_.path(), .rank = rank(), .key = dataset});
  } else if (out.dtype() != *d.info.dtype || out.shape() != shape || out.device() != Device::kCpu) {
    local = Status(ErrorCode::kInvalidArgument,
                   "dataset '" + dataset + "': rows [" + std::to_string(begin) + "," +
                       std::to_string(end) + ") need a CPU " + d.info.type_name +
                       " tensor of shape " + ShapeToString(shape) + ", got " +
                       DTypeName(out.dtype()) + " " + ShapeToString(out.shape()),
                   {.file = file_.path(), .rank = rank(), .key = dataset});
  }
  const int64_t block_rows = BlockRowsFor(d.info);
  const int64_t blocks = internal::AgreeBeforeTransfer(
      file_, local, local.ok() ? internal::CountBlocks(begin, end, block_rows) : 0);
  const int64_t row_bytes =
      static_cast<int64_t>(out.byte_size()) / std::max<int64_t>(1, end - begin);
  auto* base = static_cast<uint8_t*>(out.raw_data());
  const hid_t mem_type = Hdf5NativeType(*d.info.dtype);
  internal::ForEachBlock(begin, end, block_rows, blocks, [&](int64_t b, int64_t e) {
    void* dst = b < e ? base + (b - begin) * row_bytes : nullptr;
    internal::TransferRows(file_, d.id.get(), dataset, d.info.shape, mem_type, b, e, dst,
                           /*write=*/false);
  });
}

Tensor Hdf5Reader::ReadShard(const std::string& dataset, const Hdf5Expect& expect) {
  const RowRange r = MyShard(dataset);
  return ReadRows(dataset, r.begin, r.end, expect);
}

Tensor Hdf5Reader::ReadAll(const std::string& dataset, const Hdf5Expect& expect) {
  Opened d = OpenChecked(dataset, expect);
  Tensor out(*d.info.dtype, d.info.shape);
  if (!d.info.shape.empty()) {
    ReadInto(d, dataset, 0, d.info.shape[0], out);
    return out;
  }
  SF_CHECK_H5(H5Dread(d.id.get(), Hdf5NativeType(*d.info.dtype), H5S_ALL, H5S_ALL,
                      file_.transfer_list(), out.raw_data()),
              ErrorContext{.file = file_.path(), .key = dataset});
  return out;
}

int64_t Hdf5Reader::GroupRows(const std::vector<std::string>& datasets) const {
  if (datasets.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "an element group needs at least one dataset",
                {.file = file_.path()});
  }
  const int64_t n = NumRows(datasets[0]);
  for (size_t i = 1; i < datasets.size(); ++i) {
    const int64_t m = NumRows(datasets[i]);
    if (m != n) {
      throw Error(ErrorCode::kInvalidArgument,
                  "datasets '" + datasets[0] + "' (" + std::to_string(n) + " rows) and '" +
                      datasets[i] + "' (" + std::to_string(m) +
                      " rows) must have the same first dimension to be read as one element",
                  {.file = file_.path(), .key = datasets[0] + "," + datasets[i]});
    }
  }
  return n;
}

std::vector<Tensor> Hdf5Reader::ReadGroupRows(const std::vector<std::string>& datasets,
                                              int64_t begin, int64_t end,
                                              const std::vector<Hdf5Expect>& expects) {
  if (!expects.empty() && expects.size() != datasets.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(expects.size()) + " expectations for " +
                    std::to_string(datasets.size()) + " datasets",
                {.file = file_.path()});
  }
  GroupRows(datasets);
  std::vector<Tensor> out;
  out.reserve(datasets.size());
  for (size_t i = 0; i < datasets.size(); ++i) {
    out.push_back(ReadRows(datasets[i], begin, end, expects.empty() ? Hdf5Expect{} : expects[i]));
  }
  return out;
}

std::vector<Tensor> Hdf5Reader::ReadGroupShard(const std::vector<std::string>& datasets,
                                               const std::vector<Hdf5Expect>& expects) {
  const RowRange r = ShardRows(GroupRows(datasets), rank(), size());
  return ReadGroupRows(datasets, r.begin, r.end, expects);
}

namespace {

template <typename T, typename Acc>
void Accumulate(const void* data, int64_t count, Acc* acc) {
  const T* p = static_cast<const T*>(data);
  Acc sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<Acc>(p[i]);
  *acc += sum;
}

}  // namespace

Hdf5Sum Hdf5Reader::Sum(const std::string& dataset) {
  Opened d = OpenChecked(dataset, {});
  Hdf5Sum sum;
  sum.dtype = *d.info.dtype;
  sum.elements = NumElements(d.info.shape);
  if (d.info.shape.empty()) {
    // A scalar: every rank reads it; summing it needs no reduction.
    Tensor all = ReadAll(dataset);
    if (sum.is_integer()) {
      uint64_t acc = 0;
      if (sum.dtype == DType::kUInt8) Accumulate<uint8_t>(all.raw_data(), 1, &acc);
      if (sum.dtype == DType::kInt32) Accumulate<int32_t>(all.raw_data(), 1, &acc);
      if (sum.dtype == DType::kInt64) Accumulate<int64_t>(all.raw_data(), 1, &acc);
      sum.int_sum = static_cast<int64_t>(acc);
    } else if (sum.dtype == DType::kFloat32) {
      sum.float_sum = *all.data<float>();
    } else {
      sum.float_sum = *all.data<double>();
    }
    return sum;
  }
  const int64_t n = d.info.shape[0];
  const RowRange mine = ShardRows(n, rank(), size());
  const int64_t block_rows = BlockRowsFor(d.info);
  const int64_t blocks = internal::AgreeBeforeTransfer(
      file_, Status(), internal::CountBlocks(mine.begin, mine.end, block_rows));
  const int64_t row_elems = n > 0 ? sum.elements / n : 0;
  Shape block_shape = d.info.shape;
  block_shape[0] = std::min(block_rows, std::max<int64_t>(mine.size(), 0));
  Tensor scratch(sum.dtype, block_shape);
  const hid_t mem_type = Hdf5NativeType(sum.dtype);
  uint64_t int_sum = 0;  // unsigned: wraps instead of overflowing
  double float_sum = 0;
  internal::ForEachBlock(mine.begin, mine.end, block_rows, blocks, [&](int64_t b, int64_t e) {
    internal::TransferRows(file_, d.id.get(), dataset, d.info.shape, mem_type, b, e,
                           b < e ? scratch.raw_data() : nullptr, /*write=*/false);
    const int64_t count = (e - b) * row_elems;
    switch (sum.dtype) {
      case DType::kUInt8:
        Accumulate<uint8_t>(scratch.raw_data(), count, &int_sum);
        break;
      case DType::kInt32:
        Accumulate<int32_t>(scratch.raw_data(), count, &int_sum);
        break;
      case DType::kInt64:
        Accumulate<int64_t>(scratch.raw_data(), count, &int_sum);
        break;
      case DType::kFloat32:
        Accumulate<float>(scratch.raw_data(), count, &float_sum);
        break;
      case DType::kFloat64:
        Accumulate<double>(scratch.raw_data(), count, &float_sum);
        break;
    }
  });
  file_.AllreduceSum(&int_sum, 1);
  file_.AllreduceSum(&float_sum, 1);
  sum.int_sum = static_cast<int64_t>(int_sum);
  sum.float_sum = float_sum;
  return sum;
}

}  // namespace shardflow::io
