#include "io/text/wordpiece.hpp"

#include "core/error.hpp"
#include "io/text/text_file.hpp"

namespace shardflow::text {
namespace {

constexpr size_t kMaxWordBytes = 100;  // BERT's max_input_chars_per_word

bool IsAsciiPunctuation(unsigned char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
         (c >= 123 && c <= 126);
}

}  // namespace

std::vector<std::string> BasicWords(std::string_view s, bool lowercase) {
  std::vector<std::string> words;
  std::string word;
  auto end_word = [&]() {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      end_word();
    } else if (c < 0x20 || c == 0x7F) {
      continue;  // control bytes are dropped
    } else if (IsAsciiPunctuation(c)) {
      end_word();
      words.emplace_back(1, ch);
    } else {
      word += lowercase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : ch;
    }
  }
  end_word();
  return words;
}

WordPiece WordPiece::Read(const std::string& vocab_txt, bool lowercase) {
  return Parse(ReadTextFile(vocab_txt, "WordPiece vocabulary"), vocab_txt, lowercase);
}

WordPiece WordPiece::Parse(const std::string& text, const std::string& vocab_txt, bool lowercase) {
  WordPiece w;
  w.lowercase_ = lowercase;
  ForEachLine(text, [&](std::string_view view, int64_t number) {
    const std::string line(view);
    if (line.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "line " + std::to_string(number) + ": an empty token", {.file = vocab_txt});
    }
    if (!w.ids_.emplace(line, w.vocabulary()).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  "line " + std::to_string(number) + ": token '" + line + "' is already line " +
                      std::to_string(w.ids_.at(line) + 1),
                  {.file = vocab_txt});
    }
    w.tokens_.push_back(line);
  });
  auto id = [&](const char* name) {
    const auto it = w.ids_.find(name);
    return it == w.ids_.end() ? int64_t{-1} : it->second;
  };
  w.unk_ = id("[UNK]");
  w.sep_ = id("[SEP]");
  w.pad_ = id("[PAD]");
  if (w.unk_ < 0) {
    throw Error(ErrorCode::kInvalidArgument, "the WordPiece vocabulary has no [UNK] token",
                {.file = vocab_txt});
  }
  return w;
}

bool WordPiece::EncodeWord(std::string_view word, std::vector<int64_t>* out) const {
  if (word.size() > kMaxWordBytes) return false;
  const size_t first = out->size();
  size_t start = 0;
  std::string piece;
  while (start < word.size()) {
    int64_t found = -1;
    size_t end = word.size();
    for (; end > start; --end) {
      piece.assign(start > 0 ? "##" : "");
      piece.append(word.substr(start, end - start));
      if (const auto it = ids_.find(piece); it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      out->resize(first);
      return false;
    }
    out->push_back(found);
    start = end;
  }
  return true;
}

int64_t WordPiece::Encode(std::string_view s, std::vector<int64_t>* out) const {
  int64_t unknown = 0;
  for (const std::string& word : BasicWords(s, lowercase_)) {
    if (!EncodeWord(word, out)) {
      out->push_back(unk_);
      ++unknown;
    }
  }
  return unknown;
}

std::string WordPiece::Decode(std::span<const int64_t> ids) const {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocabulary()) {
      throw Error(ErrorCode::kInvalidArgument, "token " + std::to_string(i) + " is " +
                                                   std::to_string(id) +
                                                   ", not an id of this WordPiece vocabulary [0, " +
                                                   std::to_string(vocabulary()) + ")");
    }
    const std::string& t = tokens_[static_cast<size_t>(id)];
    if (t.rfind("##", 0) == 0) {
      s += t.substr(2);
    } else {
      if (!s.empty()) s += ' ';
      s += t;
    }
  }
  return s;
}

}  // namespace shardflow::text
