// A word-level lookup table with out-of-vocabulary buckets: tf.lookup.StaticVocabularyTable
// over a vocabulary file, applied to text cut at whitespace as tf.strings.split cuts it.
//
// The vocabulary file holds one word per line; a word's id is its line's index from 0 (the
// TextFileIndex.LINE_NUMBER of tf.lookup.TextFileInitializer). A word of the text that is not in
// it gets one of `oov_buckets` ids after the vocabulary: V + hash(word) mod oov_buckets, so
// unseen words still fall in a few learnable rows instead of one [UNK]. The hash is FNV-1a
// (64-bit, core/hash.hpp) of the word's bytes: in-vocabulary ids equal TensorFlow's, bucket ids do
// not (TensorFlow hashes with FarmHash's Fingerprint64). After the buckets come two specials:
// end_id() (the end of a document) and pad_id(); ids lie in [0, vocabulary()).
// With `lowercase`, ASCII letters are lowercased before the lookup (the vocabulary as it is).
// Reading refuses an empty line or a word given twice (file and line), a line with whitespace
// in it (it could never match a word), an empty file, and oov_buckets < 1.
// Thread-safety: immutable once read; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardflow::text {

class WordLookup {
 public:
  static WordLookup Read(const std::string& vocab_txt, int64_t oov_buckets, bool lowercase);
  // The same from the file's contents; `name` goes into errors.
  static WordLookup Parse(const std::string& text, const std::string& name, int64_t oov_buckets,
                          bool lowercase);

  // Appends the ids of `s`'s words to *out; returns the words that fell in a bucket.
  int64_t Encode(std::string_view s, std::vector<int64_t>* out) const;
  // The words joined by spaces; a bucket id becomes "[OOV:k]", end_id() `end_text`, pad_id()
  // nothing. An id outside [0, vocabulary()) is Error(kInvalidArgument).
  std::string Decode(const std::vector<int64_t>& ids, std::string_view end_text = "") const;

  int64_t words() const { return static_cast<int64_t>(words_.size()); }  // V
  int64_t oov_buckets() const { return buckets_; }
  int64_t end_id() const { return words() + buckets_; }
  int64_t pad_id() const { return end_id() + 1; }
  int64_t vocabulary() const { return end_id() + 2; }

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> ids_;
  int64_t buckets_ = 1;
  bool lowercase_ = false;
};

}  // namespace shardflow::text
