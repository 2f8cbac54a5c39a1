// JsonLinesSource: one JSON object per line (JSON Lines / NDJSON), fields mapped to typed tensors
// by a schema; lines are found as in text_line_source.hpp (plain or GZIP, CRLF, last line
// without newline, byte ranges on plain files), parsed with simdjson.
//
// Schema: each JsonField becomes one feature of the same name:
//   int64     a JSON integer                         -> int64 scalar (shape [])
//   float32   a JSON number                          -> float32 scalar
//   bytes     a JSON string (UTF-8 bytes, unescaped) -> uint8[n]
//   int64[N] / float32[N]  an array of exactly N numbers -> int64[N] / float32[N]
//   int64[*] / float32[*]  an array of any length n (a list: data.assemble's ids= entries
//                          turn it into fixed id slots) -> int64[n] / float32[n]
// Fields not in the schema are ignored. Text form (ParseJsonSchema): "id:int64, score:float32,
// text:bytes, emb:float32[4], tags:int64[*]".
// Errors (kDataLoss): a line that is not a JSON object, a missing field, a value of the wrong
// type or length. The message names the line (1-based; or its byte offset for a mid-file
// byte-range reader) and the field; the context has file, offset, record (0-based line) and
// key (field). With on_error = kSkip the line is skipped and counted (counters()).
// Blank lines (only spaces/tabs) are skipped without counting when skip_blank_lines.
// Thread-safety: Open() may be called concurrently; each reader has its own parser.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/line_cursor.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::pipeline {

struct JsonField {
  std::string name;
  DType dtype = DType::kFloat32;  // kInt64, kFloat32, or kUInt8 (= bytes from a string)
  int64_t length = 0;  // 0: scalar (or bytes); N > 0: array of exactly N numbers; -1: any length
};

// Parses "name:type[, name:type ...]" with type int64 | float32 | bytes | int64[N] |
// float32[N] | int64[*] | float32[*]; throws Error(kInvalidArgument) naming `key` and the bad
// entry.
std::vector<JsonField> ParseJsonSchema(const std::string& text, const std::string& key = "schema");

struct JsonLinesOptions {
  std::vector<JsonField> schema;      // REQUIRED, non-empty, unique names
  OnError on_error = OnError::kFail;  // bad line: fail (default) or skip and count
  bool skip_blank_lines = true;       // default true
  io::Compression compression = io::Compression::kAuto;
  int64_t header_lines = 0;         // default 0
  bool exact_line_numbers = false;  // see TextLineOptions
};

class JsonLinesSource : public RecordSource {
 public:
  JsonLinesSource(std::vector<std::string> files, JsonLinesOptions options);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return byte_ranges_; }
  std::string FormatDescription() const override;
  const SourceCounters& counters() const { return *counters_; }

 private:
  std::vector<FileInfo> infos_;
  JsonLinesOptions options_;
  bool byte_ranges_ = true;
  std::shared_ptr<SourceCounters> counters_ = std::make_shared<SourceCounters>();
};

// The registration function the format registry calls ("jsonl").
std::shared_ptr<const RecordSource> OpenJsonLinesSource(const std::vector<std::string>& files,
                                                        const JsonLinesOptions& options);

}  // namespace shardflow::pipeline
