// WordPiece (BERT's tokenizer) over a vocab.txt: one token per line, its id the line's index
// from 0; a word's continuation pieces carry the "##" prefix.
//
// Text is first cut as BERT's basic tokenizer does, for ASCII: control bytes dropped, split at
// whitespace, every ASCII punctuation byte a word of its own, ASCII letters lowercased when
// `lowercase` (an uncased vocabulary). Bytes >= 0x80 stay inside words as they are: no Unicode
// normalisation, accent stripping, Unicode punctuation or CJK splitting (where BERT's differs).
// Each word then becomes the longest vocabulary piece from its start, then the longest "##"
// piece from there, and so on; a word with no such cover, or longer than 100 bytes, becomes
// [UNK] (as BERT). Nothing is ever dropped: an unknown word is [UNK], counted by the caller.
//
// The vocabulary must hold [UNK]; [SEP] (the end of a document for language-model packing) and
// [PAD] are used when present. Reading refuses an empty line or a token given twice, naming
// file and line, and a vocabulary without [UNK].
// Thread-safety: immutable once read; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardflow::text {

class WordPiece {
 public:
  static WordPiece Read(const std::string& vocab_txt, bool lowercase);
  // The same from the file's contents; `name` goes into errors.
  static WordPiece Parse(const std::string& text, const std::string& name, bool lowercase);

  // Appends the ids of `s` to *out; returns the words that became [UNK].
  int64_t Encode(std::string_view s, std::vector<int64_t>* out) const;
  // The tokens joined BERT's way: "##" pieces glued to the one before, others after a space.
  std::string Decode(std::span<const int64_t> ids) const;

  int64_t vocabulary() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t unk_id() const { return unk_; }
  int64_t sep_id() const { return sep_; }  // -1 when the vocabulary has none
  int64_t pad_id() const { return pad_; }  // -1 when the vocabulary has none

 private:
  bool EncodeWord(std::string_view word, std::vector<int64_t>* out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  bool lowercase_ = true;
  int64_t unk_ = -1, sep_ = -1, pad_ = -1;
};

// The words of `s` as WordPiece's basic tokenizer cuts them (above).
std::vector<std::string> BasicWords(std::string_view s, bool lowercase);

}  // namespace shardflow::text
