// CsvStreamSource: typed columns of CSV files as a streaming RecordSource (format csv) — what
// tf.data's CsvDataset / make_csv_dataset offer, read through a bounded buffer (io/csv_stream.hpp:
// syntax, byte-range rule, memory), never a whole file.
//
//   CsvSourceOptions o;
//   o.columns = ParseCsvColumns("age:float32=0, city:string=?, label:int64");
//   auto source = std::make_shared<CsvStreamSource>(files, o);
//
// Element: one feature per selected column, named by it, in `columns` order: int64 / float32 /
// float64 scalars (shape []), strings as uint8[n] (their bytes). where.offset = the record's
// byte offset, where.record = its 0-based physical line (-1 when unknown: a mid-file reader
// with quoted_newlines = false).
// Columns: the header row (header = true) names them, or `column_names` (which replaces a
// header when both are given; the counts must match). Every record must have exactly that many
// fields (an error names file:line and both counts).
// Values: numbers ignore surrounding spaces/tabs and are parsed in full (std::from_chars;
// "1.5x" is an error), floats accept nan/inf; strings keep every byte. A field that is empty
// or equal to one of `na_values` is missing: it takes the column's default, or is an error
// naming file:line:column and the column when it has none.
// Byte ranges: supported when no file is compressed (SupportsByteRanges()); the resync rule is
// io/csv_stream.hpp's (exact with quoted_newlines, the default).
// Construction opens every file once to read its header (kNotFound naming a missing file or
// a column absent from the header). Thread-safety: Open() may be called concurrently; each
// reader has its own stream; the readers of a file share its io::CsvLineStarts (locked).
// REQUIRES: the source outlives its readers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/csv_stream.hpp"
#include "io/pipeline/record_source.hpp"

namespace shardflow::pipeline {

enum class CsvColumnType { kInt64, kFloat32, kFloat64, kString };
const char* CsvColumnTypeName(CsvColumnType type);

struct CsvColumnSpec {
  std::string name;
  CsvColumnType type = CsvColumnType::kFloat32;
  std::optional<std::string> default_value;  // parsed with `type` up front
};

// "name:type[=default], ..." with type int64 | float32 | float64 | string; throws
// Error(kInvalidArgument) naming `key` and the bad entry (also for a default of the wrong type).
std::vector<CsvColumnSpec> ParseCsvColumns(const std::vector<std::string>& entries,
                                           const std::string& key = "csv_columns");

struct CsvSourceOptions {
  std::vector<CsvColumnSpec> columns;     // REQUIRED: the columns read, in this order
  int64_t skip_lines = 0;                 // records skipped first (metadata before the header)
  bool header = true;                     // the first record names the columns
  std::vector<std::string> column_names;  // the file's columns (REQUIRED without a header)
  std::vector<std::string> na_values;     // fields read as missing besides the empty one
  io::CsvDialect dialect;
  // After the columns, feature kCsvMissingFeature: uint8[columns], 1 where the column was
  // missing and took its default (shardflow-convert counts them in the table's statistics).
  bool mark_missing = false;
};

inline constexpr const char* kCsvMissingFeature = "_missing";

class CsvStreamSource : public RecordSource {
 public:
  CsvStreamSource(std::vector<std::string> files, CsvSourceOptions options);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return byte_ranges_; }
  std::string FormatDescription() const override;

  // Per file: where the data starts and which field each selected column is.
  struct FileLayout {
    uint64_t data_start = 0;
    int64_t data_start_line = 1;
    size_t num_fields = 0;
    std::vector<size_t> field_of_column;
  };

 private:
  std::vector<FileInfo> infos_;
  std::vector<FileLayout> layouts_;
  std::vector<Tensor> defaults_;  // per column; empty when it has none
  // Per file: line starts found by the readers' resync scans (thread-safe; see csv_stream.hpp).
  std::vector<std::unique_ptr<io::CsvLineStarts>> line_starts_;
  CsvSourceOptions options_;
  bool byte_ranges_ = true;
};

}  // namespace shardflow::pipeline
