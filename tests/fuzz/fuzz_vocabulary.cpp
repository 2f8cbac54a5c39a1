// libFuzzer target: a vocabulary file's line (io/vocabulary_file.hpp) on arbitrary bytes. Any
// value escapes to one line that unescapes to it; a line either unescapes (and its value
// round-trips) or is refused with shardflow::Error, never anything else.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "io/vocabulary_file.hpp"

using namespace shardflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string line = io::EscapeVocabularyValue(bytes);
  if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos) std::abort();
  if (io::UnescapeVocabularyValue(line) != bytes) std::abort();
  try {
    const std::string value = io::UnescapeVocabularyValue(bytes);
    if (io::UnescapeVocabularyValue(io::EscapeVocabularyValue(value)) != value) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
