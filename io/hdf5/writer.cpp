#include "io/hdf5/writer.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/check_hdf5.hpp"
#include "io/hdf5/transfer.hpp"

namespace shardflow::io {

Hdf5Writer::Hdf5Writer(const std::string& path, Communicator comm, const Hdf5Options& options)
    : file_(std::make_unique<Hdf5File>(Hdf5File::Create(path, comm, options))) {}

void Hdf5Writer::CreateDataset(const std::string& name, DType dtype, const Shape& shape,
                               const Hdf5DatasetOptions& options) {
  if (!file_) throw Error(ErrorCode::kInvalidArgument, "the HDF5 writer is closed", {.key = name});
  const ErrorContext ctx{.file = file_->path(), .key = name};
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "negative dimension in dataset shape " + ShapeToString(shape), ctx);
    }
  }
  if (options.gzip_level < 0 || options.gzip_level > 9) {
    throw Error(ErrorCode::kInvalidArgument,
                "gzip level must be 0..9, got " + std::to_string(options.gzip_level), ctx);
  }
  if (options.chunk_rows < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "chunk_rows must be >= 0, got " + std::to_string(options.chunk_rows), ctx);
  }
  if ((options.gzip_level > 0 || options.shuffle) && options.chunk_rows == 0) {
    throw Error(ErrorCode::kInvalidArgument, "compression needs a chunked dataset (chunk_rows > 0)",
                ctx);
  }
  if (options.chunk_rows > 0 && shape.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "a scalar dataset cannot be chunked", ctx);
  }
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  H5Id space(
      SF_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), ctx));
  if (shape.empty()) space = H5Id(SF_CHECK_H5(H5Screate(H5S_SCALAR), ctx));
  H5Id dcpl(SF_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE), ctx));
  if (options.chunk_rows > 0) {
    // A chunk may not exceed a fixed-size dataset; a chunk dimension may not be 0.
    std::vector<hsize_t> chunk = dims;
    for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
    chunk[0] = static_cast<hsize_t>(
        std::clamp<int64_t>(options.chunk_rows, 1, std::max<int64_t>(shape[0], 1)));
    SF_CHECK_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), ctx);
    if (options.shuffle) SF_CHECK_H5(H5Pset_shuffle(dcpl.get()), ctx);
    if (options.gzip_level > 0) {
      SF_CHECK_H5(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.gzip_level)), ctx);
    }
  }
  // Every row is written by some rank: skip writing fill values first.
  SF_CHECK_H5(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), ctx);
  // No object timestamps, and storage allocated at creation whatever the driver (parallel HDF5
  // always does so): the same data gives the same bytes, run after run and at any rank count.
  SF_CHECK_H5(H5Pset_obj_track_times(dcpl.get(), false), ctx);
  SF_CHECK_H5(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), ctx);
  H5Id lcpl(SF_CHECK_H5(H5Pcreate(H5P_LINK_CREATE), ctx));
  SF_CHECK_H5(H5Pset_create_intermediate_group(lcpl.get(), 1), ctx);
  H5Id dataset(SF_CHECK_H5(H5Dcreate2(file_->id(), name.c_str(), Hdf5NativeType(dtype), space.get(),
                                      lcpl.get(), dcpl.get(), H5P_DEFAULT),
                           ctx));
}

void Hdf5Writer::WriteRows(const std::string& name, int64_t first_row, const Tensor& rows) {
  if (!file_) throw Error(ErrorCode::kInvalidArgument, "the HDF5 writer is closed", {.key = name});
  H5Id dataset = file_->OpenDataset(name);
  const Hdf5DatasetInfo info = DescribeDataset(dataset.get(), name, file_->path());
  const ErrorContext ctx{.file = file_->path(), .rank = file_->rank(), .key = name};
  Status local;
  const int64_t k = rows.rank() == 0 ? 0 : rows.dim(0);
  if (info.shape.empty()) {
    local = Status(ErrorCode::kInvalidArgument, "WriteRows on a scalar dataset", ctx);
  } else if (!info.dtype || *info.dtype != rows.dtype()) {
    local = Status(ErrorCode::kInvalidArgument,
                   "dataset '" + name + "' holds " + info.type_name + ", rows given are " +
                       DTypeName(rows.dtype()),
                   ctx);
  } else if (rows.rank() != info.shape.size() ||
             !std::equal(info.shape.begin() + 1, info.shape.end(), rows.shape().begin() + 1)) {
    local = Status(ErrorCode::kInvalidArgument,
                   "dataset '" + name + "' of shape " + ShapeToString(info.shape) +
                       " cannot take rows of shape " + ShapeToString(rows.shape()),
                   ctx);
  } else if (first_row < 0 || first_row + k > info.shape[0]) {
    local = Status(ErrorCode::kInvalidArgument,
                   "rows [" + std::to_string(first_row) + "," + std::to_string(first_row + k) +
                       ") are outside dataset '" + name + "' of " + std::to_string(info.shape[0]) +
                       " rows",
                   ctx);
  }
  int64_t block_rows = 1;
  int64_t my_blocks = 0;
  if (local.ok()) {
    const int64_t row_bytes = k > 0 ? static_cast<int64_t>(rows.byte_size()) / k : 0;
    block_rows = internal::BlockRows(row_bytes, info.chunk.empty() ? 1 : info.chunk[0],
                                     file_->options().block_bytes);
    my_blocks = internal::CountBlocks(first_row, first_row + k, block_rows);
  }
  const int64_t blocks = internal::AgreeBeforeTransfer(*file_, local, my_blocks);
  const int64_t row_bytes = k > 0 ? static_cast<int64_t>(rows.byte_size()) / k : 0;
  // HDF5 does not modify the buffer of a write; the cast only satisfies its void* signature.
  auto* base = static_cast<uint8_t*>(const_cast<void*>(rows.raw_data()));
  const hid_t mem_type = Hdf5NativeType(rows.dtype());
  internal::ForEachBlock(first_row, first_row + k, block_rows, blocks, [&](int64_t b, int64_t e) {
    void* src = b < e ? base + (b - first_row) * row_bytes : nullptr;
    internal::TransferRows(*file_, dataset.get(), name, info.shape, mem_type, b, e, src,
                           /*write=*/true);
  });
}

void Hdf5Writer::Close() {
  if (!file_) throw Error(ErrorCode::kInvalidArgument, "the HDF5 writer is already closed");
  const std::string path = file_->path();
  SF_CHECK_H5(H5Fflush(file_->id(), H5F_SCOPE_GLOBAL), ErrorContext{.file = path});
  file_.reset();
}

}  // namespace shardflow::io
