// The byte-level tokenizer: every byte is its own token (ids 0-255), so any byte string, valid
// UTF-8 or not, encodes and decodes back unchanged, and nothing is out of vocabulary; two
// special tokens follow: kEnd (256) ends a document (GPT-2's <|endoftext|>), kPad (257) fills a
// padded batch. The vocabulary is kVocabulary = 258 ids.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace shardflow::text {

struct ByteTokenizer {
  static constexpr int64_t kEnd = 256;
  static constexpr int64_t kPad = 257;
  static constexpr int64_t kVocabulary = 258;

  // Appends the ids of `s`'s bytes to *out.
  static void Encode(std::string_view s, std::vector<int64_t>* out);
  // The bytes of the ids below 256; kEnd becomes `end_text` (e.g. "\n" when sampling several
  // documents), kPad nothing. An id outside [0, kVocabulary) is Error(kInvalidArgument).
  static std::string Decode(std::span<const int64_t> ids, std::string_view end_text = "");
};

}  // namespace shardflow::text
