// libFuzzer target: the CSV parser (io/csv.hpp, ParseCsv) on arbitrary text. The first byte picks
// the delimiter and the column selection: every column as float64, or typed columns a (int64,
// default 0), b (float32), c (string), d (float64, default nan). A malformed file must end in
// shardflow::Error; an accepted one must give every selected column exactly `rows` values.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "io/csv.hpp"

using namespace shardflow;
using namespace shardflow::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  CsvOptions options;
  const char delimiters[] = {',', ';', '\t', '|'};
  options.delimiter = delimiters[mode & 3];
  if (mode & 4) {
    options.columns = {{"a", CsvType::kInt64, std::string("0")},
                       {"b", CsvType::kFloat32, std::nullopt},
                       {"c", CsvType::kString, std::nullopt},
                       {"d", CsvType::kFloat64, std::string("nan")}};
  }
  try {
    const CsvTable table = ParseCsv(text, "fuzz.csv", options);
    if (table.rows < 0) std::abort();
    for (const CsvColumnData& column : table.columns) {
      const int64_t n = column.type == CsvType::kString
                            ? static_cast<int64_t>(column.strings.size())
                            : column.values.num_elements();
      if (n != table.rows) std::abort();
    }
    if (!(mode & 4) && table.columns.size() != table.header.size()) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
