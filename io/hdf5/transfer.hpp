// Row-block transfers shared by Hdf5Reader and Hdf5Writer.
//
// Words used here: a *row* is one index of a dataset's first dimension (one image, one asset);
// a *chunk* is HDF5's unit of storage and compression (chunk[0] rows); a *block* is the rows
// moved by one H5Dread/H5Dwrite call. Blocks are aligned to multiples of `block_rows`, which is
// itself a multiple of the chunk's rows, counted from row 0 of the dataset: so apart from the
// first and last block of a rank's range, a block never cuts a chunk, and a compressed chunk is
// inflated once rather than once per block that touches it.
//
// In a collective transfer every rank must call H5Dread/H5Dwrite the same number of times.
// Ranks own different numbers of blocks (N not divisible by P, ranks with no rows), so they
// first agree on the largest block count (one all-reduce that also carries a failure flag, so
// a rank whose request is invalid fails everywhere instead of leaving the others waiting in
// HDF5), and a rank that has run out of blocks takes part with an empty selection.
#pragma once

#include <cstdint>
#include <functional>

#include "io/hdf5/file.hpp"

namespace shardflow::io::internal {

// Rows per block: about `block_bytes` of rows, rounded down to a multiple of `chunk_rows`
// (at least one chunk). REQUIRES: row_bytes >= 0, chunk_rows >= 1, block_bytes >= 1.
int64_t BlockRows(int64_t row_bytes, int64_t chunk_rows, int64_t block_bytes);

// Number of aligned blocks that rows [begin, end) span (0 when empty).
int64_t CountBlocks(int64_t begin, int64_t end, int64_t block_rows);

// Agrees on the outcome of a rank-local check before a collective transfer. Throws `local`
// when it is an error; throws kInvalidArgument naming the failing rank when another rank's
// check failed. Returns the largest `blocks` over all ranks. Without collective transfers
// (one rank, or Hdf5Options::collective false) nothing is exchanged.
int64_t AgreeBeforeTransfer(const Hdf5File& file, const Status& local, int64_t blocks);

// Runs `transfer(block_begin, block_end)` for every block of [begin, end), then, when the file
// is collective, `transfer(begin, begin)` (an empty block) until `agreed_blocks` calls were made.
void ForEachBlock(int64_t begin, int64_t end, int64_t block_rows, int64_t agreed_blocks,
                  const std::function<void(int64_t, int64_t)>& transfer);

// Reads (write == false) or writes rows [begin, end) of `dataset` (whose full shape is
// `shape`) from/to `buffer`, which holds (end - begin) rows of `mem_type`. An empty range takes
// part in a collective transfer with an empty selection.
void TransferRows(const Hdf5File& file, hid_t dataset, const std::string& name, const Shape& shape,
                  hid_t mem_type, int64_t begin, int64_t end, void* buffer, bool write);

}  // namespace shardflow::io::internal
