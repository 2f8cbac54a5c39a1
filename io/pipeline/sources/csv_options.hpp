// CsvConfig: the [data] keys of format csv (csv_stream_source.hpp), their registration, and
// the CsvSourceOptions they make.
//
//   key                  default  meaning
//   csv_columns          ''       columns read, in order: name:int64|float32|float64|string
//                                 [=default] (select_columns, types and defaults in one);
//                                 '' takes them from `features` (name:dtype:shape[:default]);
//                                 when set, `features` is not applied to CSV rows (it may
//                                 describe the converted shards of the same table)
//   csv_skip_lines       0        records skipped at the start of every file, before the header
//                                 (a line of metadata, as scikit-learn's CSVs have); blank and
//                                 comment lines are not counted
//   csv_header           true     the first record (not blank, not a comment) names the columns
//   csv_column_names     ''       the file's column names (required when csv_header = false;
//                                 with a header they replace it)
//   csv_delimiter        ,        one character, or "tab"
//   csv_na_values        ''       fields read as missing besides the empty field (e.g. NA, ?)
//   csv_comment          ''       lines starting with this character are skipped ('' none;
//                                 'hash' for '#', which an INI value cannot hold)
//   csv_quoted_newlines  true     quoted fields may hold line breaks (byte ranges resync by a
//                                 prefix scan); false: such a field is an error and byte ranges
//                                 resync at the next line feed (io/csv_stream.hpp)
//   csv_read_ahead_bytes 262144   read buffer per open file (memory bound of the source)
// The compression key of [data] (auto|none|gzip|zlib) applies to CSV files too.
// Errors: Error(kInvalidArgument) naming "<section>.<key>". Thread-safety: as core/config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"

namespace shardflow::pipeline {

struct CsvConfig {
  std::vector<std::string> columns;
  int64_t skip_lines = 0;
  bool header = true;
  std::vector<std::string> column_names;
  std::string delimiter = ",";
  std::vector<std::string> na_values;
  std::string comment;
  bool quoted_newlines = true;
  int64_t read_ahead_bytes = int64_t{1} << 18;
};

void RegisterCsvOptions(ConfigSchema& schema, const std::string& section, CsvConfig* config);

// The source options of `config`; columns from `features` when csv_columns is empty. Throws
// Error(kInvalidArgument) naming "<section>.<prefix><key>" for a bad value (the [data] keys
// are csv_delimiter, ...: prefix "csv_"; shardflow-convert's table input names them
// input.delimiter, ...: prefix "").
CsvSourceOptions MakeCsvSourceOptions(const CsvConfig& config,
                                      const std::vector<std::string>& features,
                                      io::Compression compression, const std::string& section,
                                      const std::string& prefix = "csv_");

}  // namespace shardflow::pipeline
