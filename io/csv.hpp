// CSV: typed columns of a CSV file with a header row, read into Tensors.
//
//   CsvOptions options;
//   options.columns = {{"timestamp", CsvType::kInt64},
//                      {"temp", CsvType::kFloat32, "0"},  // missing values become 0
//                      {"site", CsvType::kString}};
//   CsvTable table = ReadCsv("asset-17.csv", options);
//   const Tensor& temp = table["temp"].values;          // float32 [rows]
//
// Syntax is RFC 4180: fields separated by `delimiter`, records by LF or CRLF; a field may be
// enclosed in double quotes, and then holds delimiters, line breaks and quotes written twice
// (""). A quote inside an unquoted field, text after a closing quote, and a quoted field left
// open at the end of the file are errors. The first record is the header; every record must
// have as many fields as the header. Blank lines are skipped (write "" for an empty value in a
// one-column file). A UTF-8 byte order mark before the header is ignored.
//
// Values: numbers are parsed in full (std::from_chars; "1.5x" is an error, not 1.5), with
// surrounding spaces/tabs ignored and an optional leading '+'; floats accept nan and inf. An
// empty numeric field is a missing value: it takes the column's default when one is given and
// is an error otherwise. Every error names the file, the line, the column name and index, and
// what was found.
//
// Cost: the file is read into memory whole (memory: file size plus the columns). Thread-safety:
// the functions are reentrant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.hpp"

namespace shardflow::io {

enum class CsvType { kInt64, kFloat32, kFloat64, kString };
const char* CsvTypeName(CsvType type);  // "int64", "float32", "float64", "string"

struct CsvColumn {
  std::string name;
  CsvType type = CsvType::kFloat64;
  // Used for a missing (empty) value; parsed with `type` up front (a bad default is an error).
  std::optional<std::string> default_value;
};

struct CsvOptions {
  char delimiter = ',';
  // Columns to read, in the order wanted; each must exist in the header. Empty: every column
  // of the header, as float64.
  std::vector<CsvColumn> columns;
};

struct CsvColumnData {
  std::string name;
  CsvType type = CsvType::kFloat64;
  Tensor values;                     // [rows] of int64/float32/float64; empty for strings
  std::vector<std::string> strings;  // kString columns only
};

struct CsvTable {
  int64_t rows = 0;
  std::vector<std::string> header;     // every column name in the file, in file order
  std::vector<CsvColumnData> columns;  // the selected columns, in CsvOptions order
  // The selected column called `name`; throws kNotFound.
  const CsvColumnData& operator[](const std::string& name) const;
};

// Reads `path`. Throws kNotFound for a missing file or column, kInvalidArgument for a malformed
// record or value, kDataLoss for a quoted field that the end of the file leaves open.
CsvTable ReadCsv(const std::string& path, const CsvOptions& options);

// Parses CSV text already in memory; `source` names it in errors (a path, "<stdin>").
CsvTable ParseCsv(std::string_view text, const std::string& source, const CsvOptions& options);

}  // namespace shardflow::io
