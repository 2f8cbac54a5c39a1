// The tokenize map op: a document's bytes (a uint8 [n] feature: a text line, a JSON-lines
// string field, a TFRecord bytes feature of any length) become token ids, as tf.data users map
// a tokenizer (tensorflow_text) over a string feature.
//
//   in:  `input`  uint8 [n]   the document's bytes (removed from the element)
//   out: `output` int64 [L]   its ids (L = the tokens, at most max_tokens; or exactly pad_to,
//                             the tail filled with the tokenizer's pad id)
//        `length` int64 []    the ids before any padding (after any cut)
// A document of more than max_tokens ids is cut to max_tokens (truncate: the first cut in the
// process is logged with its file and record, every cut counted in the counts) or fails with an
// Error(kInvalidArgument) naming the file, the record, its token count and `too_long_key`
// (fail). An empty document is kept with length 0 (a padded model sees one pad position).
// A missing input, or one that is not uint8 bytes, is Error(kInvalidArgument) naming the
// feature and the record.
// Thread-safety: the op is called from parallel map workers; the counts are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "io/pipeline/nodes.hpp"
#include "io/text/tokenizer.hpp"

namespace shardflow::pipeline {

struct TokenizeOptions {
  std::string input = "text";
  std::string output = "tokens";
  std::string length = "length";
  int64_t max_tokens = 0;  // 0: no limit
  bool fail_too_long = false;
  int64_t pad_to = 0;  // 0: unpadded (a padded_batch or bucket stage pads); else == max_tokens
  std::string too_long_key = "data.too_long";
};

struct TokenizeCounts {
  std::atomic<int64_t> documents{0}, tokens{0}, truncated{0}, unknown_words{0}, empty{0};
};

// REQUIRES: tokenizer non-null; pad_to is 0 or max_tokens (> 0).
MapFn MakeTokenizeOp(std::shared_ptr<const text::Tokenizer> tokenizer, TokenizeOptions options,
                     std::shared_ptr<TokenizeCounts> counts = nullptr);

}  // namespace shardflow::pipeline
