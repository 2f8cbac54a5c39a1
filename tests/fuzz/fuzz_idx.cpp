// libFuzzer target: the IDX reader (io/idx.hpp) on arbitrary bytes written to a scratch file:
// ReadIdxHeader, then ReadIdx. Gzip is detected from the content, so gzip seeds reach the
// decompressing path. A malformed file must end in shardflow::Error; an accepted one must give a
// tensor of the header's dtype and shape whose size is what the header declares.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"
#include "fuzz_support.hpp"
#include "io/idx.hpp"

using namespace shardflow;
using namespace shardflow::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file(".idx");
  const std::string& path = file.Write(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const IdxHeader header = ReadIdxHeader(path);
    if (header.shape.empty() || header.shape.size() > kIdxMaxDims) std::abort();
    if (header.header_bytes != 4 + 4 * static_cast<int64_t>(header.shape.size())) std::abort();
    const Tensor t = ReadIdx(path);
    if (t.dtype() != header.dtype || t.shape() != header.shape) std::abort();
    if (!header.gzipped && header.file_bytes() != static_cast<int64_t>(size)) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
