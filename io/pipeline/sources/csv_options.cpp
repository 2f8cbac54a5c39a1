#include "io/pipeline/sources/csv_options.hpp"

#include "io/pipeline/feature_spec.hpp"

namespace shardflow::pipeline {
namespace {

// One character from "," / "tab" / "\t"; false when `text` is not one.
bool ParseChar(const std::string& text, bool allow_empty, char* out) {
  if (text.empty()) {
    *out = '\0';
    return allow_empty;
  }
  if (text == "tab" || text == "\\t") {
    *out = '\t';
    return true;
  }
  if (text == "hash") {  // an INI value cannot hold '#'
    *out = '#';
    return true;
  }
  if (text.size() != 1 || text[0] == '"' || text[0] == '\n' || text[0] == '\r') return false;
  *out = text[0];
  return true;
}

// Columns from tensor feature specs (name:dtype:shape[:default]), as the csv format took them
// before csv_columns existed.
std::vector<CsvColumnSpec> ColumnsFromFeatures(const std::vector<std::string>& features,
                                               const std::string& key) {
  std::vector<CsvColumnSpec> columns;
  for (const auto& spec : ParseFeatureSpecs(features, key).features) {
    CsvColumnSpec column{.name = spec.name};
    switch (spec.dtype) {
      case DType::kInt64:
        column.type = CsvColumnType::kInt64;
        break;
      case DType::kFloat32:
        column.type = CsvColumnType::kFloat32;
        break;
      case DType::kFloat64:
        column.type = CsvColumnType::kFloat64;
        break;
      default:
        throw Error(ErrorCode::kInvalidArgument,
                    "csv column '" + spec.name + "' must be int64, float32 or float64",
                    {.key = key, .hint = "or list the columns in csv_columns (string allowed)"});
    }
    if (!spec.default_value.empty()) {
      const double d = spec.default_value[0];
      column.default_value = column.type == CsvColumnType::kInt64
                                 ? std::to_string(static_cast<int64_t>(d))
                                 : std::to_string(d);
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace

void RegisterCsvOptions(ConfigSchema& s, const std::string& sec, CsvConfig* c) {
  s.Add(sec, "csv_columns", &c->columns,
        "csv: columns read, in order, name:int64|float32|float64|string[=default] ('' : from "
        "features)")
      .Check(
          [sec](const std::vector<std::string>& v) {
            try {
              ParseCsvColumns(v, sec + ".csv_columns");
              return true;
            } catch (const Error&) {
              return false;
            }
          },
          "must be name:int64|float32|float64|string[=default] entries with unique names");
  s.Add(sec, "csv_skip_lines", &c->skip_lines,
        "csv: records skipped at the start of every file, before the header (metadata lines)")
      .NonNegative();
  s.Add(sec, "csv_header", &c->header, "csv: the first record names the columns");
  s.Add(sec, "csv_column_names", &c->column_names,
        "csv: the files' column names (required without a header; replace a header)");
  s.Add(sec, "csv_delimiter", &c->delimiter, "csv: field delimiter, one character or 'tab'")
      .Check(
          [](const std::string& v) {
            char ch = 0;
            return ParseChar(v, false, &ch);
          },
          "must be one character (not a quote or line end) or 'tab'");
  s.Add(sec, "csv_na_values", &c->na_values,
        "csv: fields read as missing besides the empty one (missing takes the column default)");
  s.Add(sec, "csv_comment", &c->comment,
        "csv: lines starting with this character are skipped ('hash' for #)")
      .Check(
          [](const std::string& v) {
            char ch = 0;
            return ParseChar(v, true, &ch);
          },
          "must be empty, one character, or 'hash' (#)");
  s.Add(sec, "csv_quoted_newlines", &c->quoted_newlines,
        "csv: quoted fields may hold line breaks (byte ranges resync exactly by a prefix scan); "
        "false: such a field is an error, byte ranges resync at the next line feed");
  s.Add(sec, "csv_read_ahead_bytes", &c->read_ahead_bytes,
        "csv: read buffer per open file, the source's memory bound")
      .Positive();
}

CsvSourceOptions MakeCsvSourceOptions(const CsvConfig& c, const std::vector<std::string>& features,
                                      io::Compression compression, const std::string& sec,
                                      const std::string& prefix) {
  const std::string key = sec + "." + prefix;  // + the key's own name
  CsvSourceOptions o;
  o.columns = c.columns.empty() ? ColumnsFromFeatures(features, sec + ".features")
                                : ParseCsvColumns(c.columns, key + "columns");
  if (o.columns.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "format csv needs the columns to read",
                {.key = key + "columns",
                 .hint = "e.g. " + prefix + "columns = temp:float32=0, label:int64"});
  }
  if (!c.header && c.column_names.empty()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "a CSV file without a header (" + key + "header = false) needs " + key + "column_names",
        {.key = key + "column_names", .hint = "the files' column names, in order"});
  }
  o.skip_lines = c.skip_lines;
  o.header = c.header;
  o.column_names = c.column_names;
  o.na_values = c.na_values;
  if (!ParseChar(c.delimiter, false, &o.dialect.delimiter)) {
    throw Error(ErrorCode::kInvalidArgument, "bad " + prefix + "delimiter '" + c.delimiter + "'",
                {.key = key + "delimiter"});
  }
  if (!ParseChar(c.comment, true, &o.dialect.comment)) {
    throw Error(ErrorCode::kInvalidArgument, "bad " + prefix + "comment '" + c.comment + "'",
                {.key = key + "comment"});
  }
  o.dialect.quoted_newlines = c.quoted_newlines;
  o.dialect.compression = compression;
  o.dialect.read_ahead_bytes = static_cast<size_t>(c.read_ahead_bytes);
  return o;
}

}  // namespace shardflow::pipeline
