#include "io/text/byte_tokenizer.hpp"

#include "core/error.hpp"

namespace shardflow::text {

void ByteTokenizer::Encode(std::string_view s, std::vector<int64_t>* out) {
  out->reserve(out->size() + s.size());
  for (const char c : s) out->push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::Decode(std::span<const int64_t> ids, std::string_view end_text) {
  std::string s;
  s.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id >= 0 && id < 256) {
      s += static_cast<char>(static_cast<unsigned char>(id));
    } else if (id == kEnd) {
      s += end_text;
    } else if (id != kPad) {
      throw Error(ErrorCode::kInvalidArgument,
                  "token " + std::to_string(i) + " is " + std::to_string(id) +
                      ", not a byte-level id in [0, " + std::to_string(kVocabulary) + ")");
    }
  }
  return s;
}

}  // namespace shardflow::text
