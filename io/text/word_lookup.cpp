#include "io/text/word_lookup.hpp"

#include "core/error.hpp"
#include "core/hash.hpp"
#include "io/text/text_file.hpp"

namespace shardflow::text {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

WordLookup WordLookup::Read(const std::string& vocab_txt, int64_t oov_buckets, bool lowercase) {
  return Parse(ReadTextFile(vocab_txt, "lookup vocabulary"), vocab_txt, oov_buckets, lowercase);
}

WordLookup WordLookup::Parse(const std::string& text, const std::string& name, int64_t oov_buckets,
                             bool lowercase) {
  if (oov_buckets < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "the lookup needs at least one out-of-vocabulary bucket, got " +
                    std::to_string(oov_buckets),
                {.file = name});
  }
  WordLookup w;
  w.buckets_ = oov_buckets;
  w.lowercase_ = lowercase;
  ForEachLine(text, [&](std::string_view view, int64_t number) {
    const std::string line(view);
    const std::string where = "line " + std::to_string(number) + ": ";
    if (line.empty()) {
      throw Error(ErrorCode::kInvalidArgument, where + "an empty word", {.file = name});
    }
    for (const char c : line) {
      if (IsSpace(c)) {
        throw Error(ErrorCode::kInvalidArgument,
                    where + "'" + line + "' holds whitespace, so no word of a text matches it",
                    {.file = name});
      }
    }
    if (!w.ids_.emplace(line, w.words()).second) {
      throw Error(
          ErrorCode::kInvalidArgument,
          where + "word '" + line + "' is already line " + std::to_string(w.ids_.at(line) + 1),
          {.file = name});
    }
    w.words_.push_back(line);
  });
  if (w.words_.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "the lookup vocabulary has no word", {.file = name});
  }
  return w;
}

int64_t WordLookup::Encode(std::string_view s, std::vector<int64_t>* out) const {
  int64_t unknown = 0;
  std::string word;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i == start) break;
    word.assign(s.substr(start, i - start));
    if (lowercase_) {
      for (char& c : word) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
    }
    const auto it = ids_.find(word);
    if (it != ids_.end()) {
      out->push_back(it->second);
    } else {
      ++unknown;
      out->push_back(words() +
                     static_cast<int64_t>(Fnv1a64(word) % static_cast<uint64_t>(buckets_)));
    }
  }
  return unknown;
}

std::string WordLookup::Decode(const std::vector<int64_t>& ids, std::string_view end_text) const {
  std::string s;
  for (const int64_t id : ids) {
    if (id < 0 || id >= vocabulary()) {
      throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                                   " is outside the lookup's [0, " +
                                                   std::to_string(vocabulary()) + ")");
    }
    if (id == pad_id()) continue;
    if (id == end_id()) {
      s.append(end_text);
      continue;
    }
    if (!s.empty() && s.back() != '\n') s += ' ';
    if (id < words()) {
      s += words_[static_cast<size_t>(id)];
    } else {
      s.append("[OOV:").append(std::to_string(id - words())).append("]");
    }
  }
  return s;
}

}  // namespace shardflow::text
