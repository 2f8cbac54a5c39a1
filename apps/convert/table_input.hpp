// Table inputs of shardflow-convert (--input.format=table): CSV files of feature and label
// columns, read through the streaming CSV source (io/pipeline/sources/csv_stream_source.hpp), or
// JSON lines with the same columns (input.table_format = jsonl: one object per line, a field per
// column; float64 columns are read as float32, defaults do not apply, a missing field is an
// error), and their statistics computed SPMD (io/table_stats.hpp).
//
// Chunks: every plain file is cut into byte ranges of input.chunk_mb (a compressed file is one
// chunk); the list depends on the files and chunk_mb only, never on the rank count. Chunk c is
// read by rank c mod P. Its statistics (and row count) travel to rank 0 as JSON whose doubles
// round-trip exactly, and rank 0 merges them in chunk order, so the statistics — and with them
// the vocabularies and the output files — are the same bits for any number of ranks.
// Record order: chunks in order (files sorted by name, then by offset), records in file order;
// the global id is the position in that order.
// Thread-safety: collective functions; one thread per rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/convert/convert_options.hpp"
#include "comm/communicator.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"
#include "io/table_stats.hpp"

namespace shardflow::convert {

struct TableChunk {
  size_t file = 0;
  pipeline::ByteRange range;
};

struct TableInput {
  pipeline::CsvSourceOptions options;
  std::shared_ptr<const pipeline::RecordSource> source;  // yields the columns in order
  std::vector<TableChunk> chunks;
  std::vector<int64_t> chunk_rows;  // filled by GatherTableStats
  io::TableStats stats;             // idem (every rank)
};

// The CSV source options of the [input] table keys. Throws Error(kInvalidArgument) naming the
// input.* key of a bad value (Validate calls it in the parse phase: one error line, not one per
// rank).
pipeline::CsvSourceOptions TableCsvOptions(const ConvertOptions& options);

// Opens input.files with the [input] table keys and plans the chunks. Throws like the source.
TableInput OpenTableInput(const ConvertOptions& options);

// Statistics of every column over every chunk; `categorical` int64 columns get vocabularies
// (string columns always do). Collective over `comm`; fills input->stats and ->chunk_rows on
// every rank.
void GatherTableStats(comm::Communicator& comm, const std::vector<std::string>& categorical,
                      TableInput* input);

}  // namespace shardflow::convert
