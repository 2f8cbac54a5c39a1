// CSV files as a row source: the columns named by the feature specs, one scalar each.
#include "io/csv.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/row_source.hpp"

namespace shardflow::pipeline {

std::shared_ptr<const RecordSource> OpenCsvSource(const std::vector<std::string>& files,
                                                  const SourceOptions& options) {
  io::CsvOptions csv;
  uint64_t row_bytes = 0;
  for (const auto& spec : ParseFeatureSpecs(options.features).features) {
    io::CsvColumn column{.name = spec.name};
    switch (spec.dtype) {
      case DType::kInt64:
        column.type = io::CsvType::kInt64;
        break;
      case DType::kFloat32:
        column.type = io::CsvType::kFloat32;
        break;
      case DType::kFloat64:
        column.type = io::CsvType::kFloat64;
        break;
      default:
        throw Error(ErrorCode::kInvalidArgument,
                    "csv column '" + spec.name + "' must be int64, float32 or float64",
                    {.key = "features"});
    }
    if (!spec.default_value.empty()) column.default_value = std::to_string(spec.default_value[0]);
    row_bytes += DTypeSize(spec.dtype);
    csv.columns.push_back(std::move(column));
  }
  if (csv.columns.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "format csv needs the columns to read",
                {.key = "features", .hint = "e.g. features = temp:float32, label:int64"});
  }
  // CSV has no index: every file is parsed once, here, and kept (memory: the columns).
  auto tables = std::make_shared<std::vector<RowBlock>>();
  std::vector<FileInfo> infos;
  for (const auto& path : files) {
    FileInfo info = StatFile(path);
    io::CsvTable table = io::ReadCsv(path, csv);
    info.num_records = table.rows;
    RowBlock block;
    for (auto& c : table.columns) block.emplace_back(c.name, std::move(c.values));
    tables->push_back(std::move(block));
    infos.push_back(std::move(info));
  }
  RowSource::Loader loader = [tables](size_t file, int64_t begin, int64_t end) {
    RowBlock block;
    for (const auto& [name, t] : tables->at(file)) block.emplace_back(name, t.Slice(begin, end));
    return block;
  };
  std::vector<uint64_t> sizes(infos.size(), row_bytes);
  return std::make_shared<RowSource>(std::move(infos), std::move(sizes), std::move(loader), "csv",
                                     options.block_rows);
}

}  // namespace shardflow::pipeline
