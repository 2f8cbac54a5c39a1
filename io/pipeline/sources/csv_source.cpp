// CSV files as a streaming record source (csv_stream_source.hpp): the columns of
// options.csv, or those named by the feature specs when it lists none.
#include "io/pipeline/sources/csv_options.hpp"
#include "io/pipeline/sources/open_source.hpp"

namespace shardflow::pipeline {

std::shared_ptr<const RecordSource> OpenCsvSource(const std::vector<std::string>& files,
                                                  const SourceOptions& options) {
  CsvSourceOptions csv = options.csv;
  if (csv.columns.empty()) {  // throws, naming data.csv_columns, when features is empty too
    csv.columns =
        MakeCsvSourceOptions(CsvConfig{}, options.features, io::Compression::kAuto, "data").columns;
  }
  return std::make_shared<CsvStreamSource>(files, std::move(csv));
}

}  // namespace shardflow::pipeline
