#include "io/hdf5/transfer.hpp"

#include <algorithm>
#include <vector>

#include "core/check_hdf5.hpp"

namespace shardflow::io::internal {

int64_t BlockRows(int64_t row_bytes, int64_t chunk_rows, int64_t block_bytes) {
  const int64_t rows = row_bytes > 0 ? std::max<int64_t>(1, block_bytes / row_bytes) : chunk_rows;
  return std::max<int64_t>(chunk_rows, rows / chunk_rows * chunk_rows);
}

int64_t CountBlocks(int64_t begin, int64_t end, int64_t block_rows) {
  if (end <= begin) return 0;
  return (end - 1) / block_rows - begin / block_rows + 1;
}

int64_t AgreeBeforeTransfer(const Hdf5File& file, const Status& local, int64_t blocks) {
  const bool collective = file.uses_mpio() && file.options().collective;
  if (!collective) {
    ThrowIfError(local);
    return blocks;
  }
  // [0]: 1 + the highest failing rank (0 when none failed); [1]: the block count.
  int64_t agreed[2] = {local.ok() ? 0 : file.rank() + 1, blocks};
  file.AllreduceMax(agreed, 2);
  ThrowIfError(local);
  if (agreed[0] != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(agreed[0] - 1) +
                    " refused its part of a collective HDF5 transfer (its error names why)",
                {.file = file.path(), .rank = file.rank()});
  }
  return agreed[1];
}

void ForEachBlock(int64_t begin, int64_t end, int64_t block_rows, int64_t agreed_blocks,
                  const std::function<void(int64_t, int64_t)>& transfer) {
  int64_t calls = 0;
  for (int64_t b = begin; b < end; ++calls) {
    const int64_t e = std::min(end, (b / block_rows + 1) * block_rows);
    transfer(b, e);
    b = e;
  }
  for (; calls < agreed_blocks; ++calls) transfer(begin, begin);
}

void TransferRows(const Hdf5File& file, hid_t dataset, const std::string& name, const Shape& shape,
                  hid_t mem_type, int64_t begin, int64_t end, void* buffer, bool write) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  const size_t rank = shape.size();
  std::vector<hsize_t> start(rank, 0);
  std::vector<hsize_t> count(shape.begin(), shape.end());
  start[0] = static_cast<hsize_t>(begin);
  count[0] = static_cast<hsize_t>(end - begin);
  H5Id file_space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  H5Id mem_space;
  if (end > begin) {
    SF_CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                    count.data(), nullptr),
                ctx);
    mem_space =
        H5Id(SF_CHECK_H5(H5Screate_simple(static_cast<int>(rank), count.data(), nullptr), ctx));
  } else {
    // This rank has nothing to move but still takes part in the collective call.
    SF_CHECK_H5(H5Sselect_none(file_space.get()), ctx);
    mem_space = H5Id(SF_CHECK_H5(H5Scopy(file_space.get()), ctx));
    SF_CHECK_H5(H5Sselect_none(mem_space.get()), ctx);
  }
  ErrorContext io_ctx = ctx;
  io_ctx.hint = "rows [" + std::to_string(begin) + "," + std::to_string(end) + ")";
  if (write) {
    SF_CHECK_H5(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(),
                         buffer),
                io_ctx);
  } else {
    SF_CHECK_H5(
        H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(), buffer),
        io_ctx);
  }
}

}  // namespace shardflow::io::internal
