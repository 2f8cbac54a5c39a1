#include "io/text/tokenizer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/text/byte_tokenizer.hpp"

namespace shardflow::text {
namespace {

[[noreturn]] void Missing(const TokenizerOptions& o, const std::string& key,
                          const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "tokenizer " + o.kind + " needs " + what,
              {.key = o.key_prefix + key});
}

}  // namespace

const std::vector<std::string>& TokenizerKinds() {
  static const std::vector<std::string> kinds = {"byte", "bpe", "wordpiece", "lookup"};
  return kinds;
}

Tokenizer Tokenizer::Make(const TokenizerOptions& o) {
  const auto& kinds = TokenizerKinds();
  if (std::find(kinds.begin(), kinds.end(), o.kind) == kinds.end()) {
    throw Error(ErrorCode::kInvalidArgument, "unknown tokenizer '" + o.kind + "'",
                {.key = o.key_prefix + "tokenizer", .hint = "byte, bpe, wordpiece or lookup"});
  }
  Tokenizer t;
  t.kind_ = o.kind;
  if (o.kind == "byte") {
    t.end_ = ByteTokenizer::kEnd;
    t.pad_ = ByteTokenizer::kPad;
    t.vocabulary_ = ByteTokenizer::kVocabulary;
  } else if (o.kind == "bpe") {
    if (o.bpe_vocab.empty() || o.bpe_merges.empty()) {
      Missing(o, o.bpe_vocab.empty() ? "bpe_vocab" : "bpe_merges",
              "bpe_vocab (vocab.json) and bpe_merges (merges.txt)");
    }
    return FromBpe(Bpe::Read(o.bpe_vocab, o.bpe_merges));
  } else if (o.kind == "wordpiece") {
    if (o.wordpiece_vocab.empty()) Missing(o, "wordpiece_vocab", "wordpiece_vocab (a vocab.txt)");
    auto w = std::make_shared<const WordPiece>(WordPiece::Read(o.wordpiece_vocab, o.lowercase));
    if (w->sep_id() < 0 || w->pad_id() < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the WordPiece vocabulary needs [SEP] (the end of a document) and [PAD]",
                  {.file = o.wordpiece_vocab, .key = o.key_prefix + "wordpiece_vocab"});
    }
    t.end_ = w->sep_id();
    t.pad_ = w->pad_id();
    t.vocabulary_ = w->vocabulary();
    t.wordpiece_ = std::move(w);
  } else {
    if (o.lookup_vocab.empty()) Missing(o, "lookup_vocab", "lookup_vocab (one word a line)");
    auto w = std::make_shared<const WordLookup>(
        WordLookup::Read(o.lookup_vocab, o.oov_buckets, o.lowercase));
    t.end_ = w->end_id();
    t.pad_ = w->pad_id();
    t.vocabulary_ = w->vocabulary();
    t.lookup_ = std::move(w);
  }
  return t;
}

Tokenizer Tokenizer::FromBpe(Bpe bpe) {
  Tokenizer t;
  t.kind_ = "bpe";
  t.end_ = bpe.end_id();
  t.pad_ = bpe.pad_id();
  t.vocabulary_ = bpe.vocabulary();
  t.bpe_ = std::make_shared<const Bpe>(std::move(bpe));
  return t;
}

int64_t Tokenizer::Encode(std::string_view s, std::vector<int64_t>* out) const {
  if (bpe_) {
    bpe_->Encode(s, out);
    return 0;
  }
  if (wordpiece_) return wordpiece_->Encode(s, out);
  if (lookup_) return lookup_->Encode(s, out);
  ByteTokenizer::Encode(s, out);
  return 0;
}

std::string Tokenizer::Decode(std::span<const int64_t> ids, std::string_view end_text) const {
  if (bpe_) return bpe_->Decode(ids, end_text);
  if (wordpiece_) return wordpiece_->Decode(ids);
  if (lookup_) return lookup_->Decode(std::vector<int64_t>(ids.begin(), ids.end()), end_text);
  return ByteTokenizer::Decode(ids, end_text);
}

std::string Tokenizer::Describe() const {
  return kind_ + " (" + std::to_string(vocabulary_) + " ids)";
}

}  // namespace shardflow::text
