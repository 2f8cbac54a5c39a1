// TableStats: per-column statistics of a table (numeric: count, mean, spread, range;
// categorical: the vocabulary with counts), the file shardflow-convert writes beside a converted
// table (OUT.stats.json) and the pipeline's assemble step reads (io/pipeline/assemble.hpp).
//
//   TableStats part = ...;                      // one chunk of the table
//   total.Merge(part);                          // chunks merged in a fixed order
//   WriteTableStats("out.stats.json", total);
//   const ColumnStats* age = ReadTableStats("out.stats.json").Find("age");
//
// Numeric columns keep (count, mean, m2) and merge by Chan's parallel formula, so merging the
// same chunks in the same order gives the same bits whatever process computed each chunk
// (convert cuts the table into chunks that do not depend on the rank count). std is the
// population standard deviation sqrt(m2 / count). Categorical columns keep a sorted map from
// value (bytes; integers in decimal) to count; the vocabulary is its keys in byte order.
// JSON: {"rows": N, "missing_values": "...", "columns": [{"name", "type", "categorical",
// "missing", "count", "mean", "m2", "std", "min", "max", "vocabulary": [...], "counts": [...]}]};
// doubles printed with 17 digits, so a file read back merges to the same bits. "missing_values"
// says in words that the defaults of missing values are counted in the statistics; "missing"
// (optional when read: 0) is how many there were.
// Errors: a missing file is kNotFound, malformed JSON kInvalidArgument naming the file.
// Thread-safety: plain values; the functions are reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shardflow::io {

struct NumericStats {
  int64_t count = 0;
  double mean = 0, m2 = 0;
  double min = 0, max = 0;  // meaningful when count > 0

  void Add(double x);
  void Merge(const NumericStats& other);
  double Std() const;
};

struct ColumnStats {
  std::string name;
  std::string type;          // int64 | float32 | float64 | string
  bool categorical = false;  // strings always; integers when asked for
  NumericStats numeric;      // numeric types
  // Rows where the column was missing (empty or an NA value) and took the column's default:
  // the default is counted in `numeric` and `values` like any value.
  int64_t missing = 0;
  std::map<std::string, int64_t> values;  // categorical: value -> count

  std::vector<std::string> Vocabulary() const;  // the keys of `values`, in byte order
};

struct TableStats {
  int64_t rows = 0;
  std::vector<ColumnStats> columns;

  const ColumnStats* Find(const std::string& name) const;  // nullptr when absent
  // Adds `other`'s counts. REQUIRES: the same columns in the same order (kInternal otherwise).
  void Merge(const TableStats& other);
};

std::string TableStatsToJson(const TableStats& stats);
// `source` names the text in errors.
TableStats TableStatsFromJson(std::string_view json, const std::string& source);
void WriteTableStats(const std::string& path, const TableStats& stats);
TableStats ReadTableStats(const std::string& path);

// Appends `text` to *out as a JSON string literal (quotes, escapes).
void AppendJsonString(std::string* out, std::string_view text);

}  // namespace shardflow::io
