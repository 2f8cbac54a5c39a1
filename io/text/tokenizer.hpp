// One face for the tokenizers of io/text, as shardflow-convert and the input pipeline's
// tokenize op (io/pipeline/ops/tokenize.hpp) pick them by name:
//   byte       every byte a token (byte_tokenizer.hpp); 258 ids
//   bpe        byte-level BPE read from vocab.json + merges.txt (bpe.hpp), or one learned by the
//              caller (FromBpe)
//   wordpiece  BERT's WordPiece over a vocab.txt (wordpiece.hpp); needs [SEP] and [PAD]
//   lookup     words cut at whitespace looked up in a one-word-a-line file, unknown words hashed
//              into out-of-vocabulary buckets (word_lookup.hpp: StaticVocabularyTable's rule)
// Each has an end id (a document's end) and a pad id, and ids in [0, vocabulary()).
// Errors: an unknown kind or a missing file name is Error(kInvalidArgument) naming the option's
// key (`key_prefix` + "tokenizer", "bpe_vocab", ...); the readers' errors name file and line.
// Thread-safety: immutable once made; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/text/bpe.hpp"
#include "io/text/word_lookup.hpp"
#include "io/text/wordpiece.hpp"

namespace shardflow::text {

struct TokenizerOptions {
  std::string kind = "byte";  // byte | bpe | wordpiece | lookup
  std::string bpe_vocab, bpe_merges;
  std::string wordpiece_vocab;
  std::string lookup_vocab;
  int64_t oov_buckets = 1;  // lookup
  bool lowercase = true;    // wordpiece, lookup: ASCII letters lowercased first
  std::string key_prefix;   // "data." or "preprocess.": what errors name
};

// The names TokenizerOptions::kind takes.
const std::vector<std::string>& TokenizerKinds();

class Tokenizer {
 public:
  // Reads the files `options` names.
  static Tokenizer Make(const TokenizerOptions& options);
  static Tokenizer FromBpe(Bpe bpe);

  // Appends the ids of `s` to *out; returns the words that had no entry of their own
  // (WordPiece's [UNK], the lookup's buckets; 0 for byte and bpe, where every byte has one).
  int64_t Encode(std::string_view s, std::vector<int64_t>* out) const;
  // The text of the ids (end_id() as `end_text`, pad_id() as nothing).
  std::string Decode(std::span<const int64_t> ids, std::string_view end_text = "") const;

  const std::string& kind() const { return kind_; }
  int64_t end_id() const { return end_; }
  int64_t pad_id() const { return pad_; }
  int64_t vocabulary() const { return vocabulary_; }
  const Bpe* bpe() const { return bpe_.get(); }
  // "bpe (2050 ids)", for logs.
  std::string Describe() const;

 private:
  std::string kind_ = "byte";
  std::shared_ptr<const Bpe> bpe_;
  std::shared_ptr<const WordPiece> wordpiece_;
  std::shared_ptr<const WordLookup> lookup_;
  int64_t end_ = 0, pad_ = 0, vocabulary_ = 0;
};

}  // namespace shardflow::text
