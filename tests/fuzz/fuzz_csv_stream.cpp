// libFuzzer target: the streaming CSV source (io/pipeline/sources/csv_stream_source.hpp) on
// arbitrary text written to a scratch file, with columns a (int64, default 0), b (float32),
// c (string) read by name from the header. The first byte picks the options: bits 0-1 the
// delimiter (, ; tab |), bit 2 comment lines ('#'), bit 3 csv_quoted_newlines = false, bit 4 a
// ".gz" name (GZIP), bits 5-7 where to cut the file in two byte ranges (eighths).
// Bad input must end in shardflow::Error; every record must hold a, b, c with their dtypes and
// shapes; when the whole file reads cleanly, the two byte ranges must read the same records
// (by offset and value) in the same order — the byte-range rule of io/csv_stream.hpp.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "fuzz_support.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"

using namespace shardflow;
using namespace shardflow::pipeline;

namespace {

// One record as text: its offset and its three values.
std::string Key(const Element& e) {
  const auto& f = e.features;
  if (f.size() != 3 || f[0].first != "a" || f[1].first != "b" || f[2].first != "c") std::abort();
  if (f[0].second.dtype() != DType::kInt64 || !f[0].second.shape().empty()) std::abort();
  if (f[1].second.dtype() != DType::kFloat32 || !f[1].second.shape().empty()) std::abort();
  if (f[2].second.dtype() != DType::kUInt8 || f[2].second.shape().size() != 1) std::abort();
  float b = 0;
  std::memcpy(&b, f[1].second.raw_data(), sizeof b);
  uint32_t bits = 0;
  std::memcpy(&bits, &b, sizeof bits);
  return std::to_string(e.where.offset) + "|" + std::to_string(f[0].second.data<int64_t>()[0]) +
         "|" + std::to_string(bits) + "|" +
         std::string(static_cast<const char*>(f[2].second.raw_data()), f[2].second.byte_size());
}

std::vector<std::string> ReadAll(const CsvStreamSource& source, const ByteRange& range) {
  std::unique_ptr<RecordReader> reader = source.Open(0, range);
  std::vector<std::string> keys;
  Element e;
  while (reader->Next(&e)) keys.push_back(Key(e));
  return keys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  static fuzz::ScratchFile plain(".csv");
  static fuzz::ScratchFile gzip(".csv.gz");
  const bool gzipped = (mode & 16) != 0;
  const std::string& path = (gzipped ? gzip : plain).Write(text);
  CsvSourceOptions o;
  o.columns = ParseCsvColumns({"a:int64=0", "b:float32", "c:string"});
  const char delimiters[] = {',', ';', '\t', '|'};
  o.dialect.delimiter = delimiters[mode & 3];
  o.dialect.comment = (mode & 4) ? '#' : '\0';
  o.dialect.quoted_newlines = (mode & 8) == 0;
  o.dialect.read_ahead_bytes = 4096;
  std::vector<std::string> whole;
  try {
    CsvStreamSource source({path}, o);
    whole = ReadAll(source, ByteRange{});
  } catch (const Error&) {
    return 0;
  }
  if (gzipped) return 0;
  const uint64_t split = (mode >> 5) * text.size() / 8;
  std::vector<std::string> halves;
  try {
    CsvStreamSource source({path}, o);
    halves = ReadAll(source, ByteRange{0, split});
    for (auto& k : ReadAll(source, ByteRange{split, text.size()})) halves.push_back(std::move(k));
  } catch (const Error&) {
    // The whole file read cleanly, so its ranges must too.
    std::abort();
  }
  if (halves != whole) std::abort();
  return 0;
}
