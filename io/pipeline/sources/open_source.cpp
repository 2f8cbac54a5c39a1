#include "io/pipeline/sources/open_source.hpp"

#include "io/pipeline/sources/text_line_source.hpp"
#include "io/pipeline/sources/tfrecord_source.hpp"

namespace shardflow::pipeline {

std::shared_ptr<const RecordSource> OpenRecordSource(const std::string& format,
                                                     const std::vector<std::string>& files,
                                                     const SourceOptions& options) {
  if (format == "tfrecord") {
    return std::make_shared<TFRecordSource>(
        files, TFRecordSourceOptions{.compression = options.compression,
                                     .on_corrupt = options.on_corrupt,
                                     .finite_features = options.finite_features});
  }
  if (format == "hdf5") return OpenHdf5Source(files, options);
  if (format == "idx") return OpenIdxSource(files, options);
  if (format == "csv") return OpenCsvSource(files, options);
  if (format == "text") {
    return OpenTextLineSource(files, TextLineOptions{.compression = options.compression,
                                                     .header_lines = options.header_lines});
  }
  if (format == "jsonl") {
    return OpenJsonLinesSource(files, JsonLinesOptions{.schema = options.json_schema,
                                                       .on_error = options.on_error,
                                                       .compression = options.compression,
                                                       .header_lines = options.header_lines});
  }
  if (format == "fixed") return OpenFixedLengthSource(files, options.fixed);
  if (format == "images") return OpenImageFolderSource(options.images);
  throw Error(
      ErrorCode::kInvalidArgument, "unknown data format '" + format + "'",
      {.key = "format", .hint = "one of: tfrecord, hdf5, idx, csv, text, jsonl, fixed, images"});
}

SourceFactory MakeSourceFactory(SourceOptions options) {
  return [options](const std::string& format, const std::vector<std::string>& files) {
    return OpenRecordSource(format, files, options);
  };
}

}  // namespace shardflow::pipeline
