// libFuzzer target: the JSON lines source (io/pipeline/sources/json_lines_source.hpp) on
// arbitrary text written to a scratch file, parsed against the schema
// "id:int64, score:float32, text:bytes, emb:float32[3], ids:int64[2]". The first byte picks the
// options: bit 0 on_error skip, bit 1 a ".gz" name (GZIP), bit 2 one header line, bit 3 exact
// line numbers, bit 4 also read the file as two byte ranges split at (byte >> 5) / 8 of it.
// Bad input must end in shardflow::Error; every record returned must hold the schema's features
// with their shapes; the two byte ranges must return as many records as the whole file.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "fuzz_support.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"

using namespace shardflow;
using namespace shardflow::pipeline;

namespace {

// Reads `range` of the source's file; returns the record count, each record checked against
// the schema (names, dtypes and shapes, in schema order).
int64_t ReadAll(const JsonLinesSource& source, const ByteRange& range) {
  std::unique_ptr<RecordReader> reader = source.Open(0, range);
  Element e;
  int64_t n = 0;
  while (reader->Next(&e)) {
    const auto& f = e.features;
    if (f.size() != 5 || f[0].first != "id" || f[4].first != "ids") std::abort();
    if (f[0].second.dtype() != DType::kInt64 || !f[0].second.shape().empty()) std::abort();
    if (f[1].second.dtype() != DType::kFloat32 || !f[1].second.shape().empty()) std::abort();
    if (f[2].second.dtype() != DType::kUInt8 || f[2].second.shape().size() != 1) std::abort();
    if (f[3].second.shape() != Shape{3} || f[4].second.shape() != Shape{2}) std::abort();
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  static fuzz::ScratchFile plain(".jsonl");
  static fuzz::ScratchFile gzip(".jsonl.gz");
  const bool gzipped = (mode & 2) != 0;
  const std::string& path = (gzipped ? gzip : plain).Write(text);
  JsonLinesOptions o;
  o.schema = ParseJsonSchema("id:int64, score:float32, text:bytes, emb:float32[3], ids:int64[2]");
  o.on_error = (mode & 1) ? OnError::kSkip : OnError::kFail;
  o.header_lines = (mode & 4) ? 1 : 0;
  o.exact_line_numbers = (mode & 8) != 0;
  int64_t whole = -1;
  try {
    JsonLinesSource source({path}, o);
    whole = ReadAll(source, ByteRange{});
  } catch (const Error&) {
    return 0;
  }
  if (!(mode & 16) || gzipped || o.header_lines != 0) return 0;
  const uint64_t split = (mode >> 5) * text.size() / 8;
  int64_t halves = 0;
  try {
    JsonLinesSource source({path}, o);
    halves = ReadAll(source, ByteRange{0, split}) + ReadAll(source, ByteRange{split, text.size()});
  } catch (const Error&) {
    // The whole file parsed (or skipped its bad lines), so its ranges must too.
    std::abort();
  }
  if (halves != whole) std::abort();
  return 0;
}
