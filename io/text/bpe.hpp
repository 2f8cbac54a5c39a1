// Byte-pair encoding (Sennrich et al. 2016; byte-level as GPT-2): learned here from a corpus, or
// read from the common vocab.json + merges.txt layout (GPT-2's and Hugging Face's).
//
// Text is first cut into chunks as GPT-2 does (a simplified form of its pattern, ASCII classes,
// every byte >= 0x80 counted as a letter): an optional space and a run of letters, an optional
// space and a run of digits, an optional space and a run of other non-space bytes, or a run of
// whitespace (whose last space joins the next chunk when one follows). Each chunk starts as its
// bytes, and the merges are applied by rank, lowest first, until none applies; chunks never
// merge with each other. Every byte has a token, so any byte string encodes, nothing is out of
// vocabulary, and Decode(Encode(s)) == s.
//
// Ids: a learned vocabulary has the 256 bytes at ids 0-255 and merge k's token at 256 + k; a read
// one has the files' ids. After them come the specials: end_id() (<|endoftext|>; the files' own
// when vocab.json has it) and pad_id().
//
// Files: vocab.json is one JSON object of token -> id, the token's bytes written through GPT-2's
// byte-to-unicode table (printable bytes as themselves, the others shifted to U+0100...);
// merges.txt is an optional "#version" line, then one "LEFT RIGHT" pair per line in rank order.
// Reading checks every line: a pair that is not two tokens, a token not in vocab.json, a merged
// token missing from it, a byte without a token, duplicate ids: Error(kInvalidArgument) naming
// file and line (vocab.json: the token).
// Thread-safety: a Bpe is immutable once made; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shardflow::text {

// The chunks of `s` (views into it), as described above.
std::vector<std::string_view> PreTokenize(std::string_view s);

class Bpe {
 public:
  // Learns merges from `documents` until the vocabulary (256 bytes + merges, specials not
  // counted) has `vocabulary` tokens or no pair occurs twice. Ties go to the pair of lower ids,
  // so the result is the same on every machine. Each merge recounts the pairs of the distinct
  // chunks: convert took 10.4 s in all for 1,792 merges on the 2.6 MB fortunes corpus (2026-11-29);
  // a corpus of gigabytes wants the incremental pair-count update. REQUIRES: vocabulary >= 256.
  static Bpe Learn(const std::vector<std::string>& documents, int64_t vocabulary);
  // Reads vocab.json and merges.txt (paths).
  static Bpe Read(const std::string& vocab_json, const std::string& merges_txt);
  // The same from the files' contents; the names go into errors.
  static Bpe Parse(const std::string& vocab_text, const std::string& merges_text,
                   const std::string& vocab_name, const std::string& merges_name);
  // Writes them; Error(kIo) naming the file.
  void Write(const std::string& vocab_json, const std::string& merges_txt) const;

  // Appends the ids of `s` to *out.
  void Encode(std::string_view s, std::vector<int64_t>* out) const;
  // The bytes of the ids; end_id() becomes `end_text`, pad_id() nothing. An unknown id is
  // Error(kInvalidArgument).
  std::string Decode(std::span<const int64_t> ids, std::string_view end_text = "") const;

  int64_t tokens() const { return static_cast<int64_t>(token_bytes_.size()); }  // no specials
  int64_t end_id() const { return end_id_; }
  int64_t pad_id() const { return end_id_ + 1; }
  int64_t vocabulary() const { return end_id_ + 2; }  // ids in [0, vocabulary())
  int64_t merges() const { return static_cast<int64_t>(merges_.size()); }

 private:
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return std::hash<int64_t>()(p.first * 1000003 + p.second);
    }
  };
  void EncodeChunk(std::string_view chunk, std::vector<int64_t>* out) const;
  void ParseVocabulary(const std::string& text, const std::string& name);  // tokens, end_id_
  void ParseMerges(const std::string& text, const std::string& name);      // merges_
  void Index();  // byte_id_ and rank_ from token_bytes_ and merges_

  std::vector<std::string> token_bytes_;             // by id
  std::vector<std::pair<int64_t, int64_t>> merges_;  // by rank: (left, right)
  std::vector<int64_t> merged_;                      // by rank: the merged token's id
  std::unordered_map<std::pair<int64_t, int64_t>, int64_t, PairHash> rank_;  // pair -> rank
  int64_t byte_id_[256] = {};
  int64_t end_id_ = 0;
};

}  // namespace shardflow::text
