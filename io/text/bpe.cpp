#include "io/text/bpe.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "io/text/text_file.hpp"

namespace shardflow::text {
namespace {

enum class CharClass { kLetter, kDigit, kSpace, kOther };

CharClass ClassOf(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x80 || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z')) return CharClass::kLetter;
  if (u >= '0' && u <= '9') return CharClass::kDigit;
  if (u == ' ' || u == '\t' || u == '\n' || u == '\r' || u == '\f' || u == '\v') {
    return CharClass::kSpace;
  }
  return CharClass::kOther;
}

// GPT-2's contractions: 's 't 're 've 'm 'll 'd after an apostrophe; their length, or 0.
size_t Contraction(std::string_view s, size_t i) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  for (std::string_view c : {"s", "t", "m", "d", "re", "ve", "ll"}) {
    if (s.substr(i + 1, c.size()) == c) return 1 + c.size();
  }
  return 0;
}

size_t RunEnd(std::string_view s, size_t from, CharClass cls) {
  while (from < s.size() && ClassOf(s[from]) == cls) ++from;
  return from;
}

// GPT-2's byte <-> unicode table: printable Latin-1 bytes map to themselves, the other 68 to
// U+0100 and up, in byte order.
std::vector<uint32_t> ByteToCodepoint() {
  std::vector<uint32_t> table(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    table[b] = printable ? b : next++;
  }
  return table;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else {  // the table's code points are below U+0800
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string TokenName(const std::string& bytes) {
  static const std::vector<uint32_t> table = ByteToCodepoint();
  std::string out;
  for (char c : bytes) AppendUtf8(table[static_cast<unsigned char>(c)], &out);
  return out;
}

// The bytes of a vocab.json token name; false when it holds a character outside the table.
bool TokenBytes(const std::string& name, std::string* bytes) {
  static const std::vector<int> inverse = [] {
    std::vector<int> inv(512, -1);
    const std::vector<uint32_t> table = ByteToCodepoint();
    for (int b = 0; b < 256; ++b) inv[table[static_cast<size_t>(b)]] = b;
    return inv;
  }();
  bytes->clear();
  for (size_t i = 0; i < name.size();) {
    const auto u = static_cast<unsigned char>(name[i]);
    uint32_t cp = 0;
    if (u < 0x80) {
      cp = u;
      i += 1;
    } else if ((u & 0xE0) == 0xC0 && i + 1 < name.size()) {
      cp = ((u & 0x1Fu) << 6) | (static_cast<unsigned char>(name[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return false;
    }
    if (cp >= inverse.size() || inverse[cp] < 0) return false;
    *bytes += static_cast<char>(inverse[cp]);
  }
  return !bytes->empty();
}

constexpr const char* kEndName = "<|endoftext|>";
constexpr const char* kPadName = "<|pad|>";

// Error(kInvalidArgument) "line N: why [file=FILE]" (no line for vocab.json's whole object).
[[noreturn]] void BadFile(const std::string& file, int64_t line, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              (line > 0 ? "line " + std::to_string(line) + ": " : std::string()) + why,
              {.file = file});
}

}  // namespace

std::vector<std::string_view> PreTokenize(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = 0;
    if (const size_t c = Contraction(s, i); c > 0) {
      end = i + c;
    } else if (s[i] == ' ' && i + 1 < s.size() && ClassOf(s[i + 1]) != CharClass::kSpace) {
      end = RunEnd(s, i + 2, ClassOf(s[i + 1]));  // a space and the run after it
    } else if (ClassOf(s[i]) == CharClass::kSpace) {
      end = RunEnd(s, i + 1, CharClass::kSpace);
      if (end < s.size() && end - i > 1) --end;  // the last one goes with the next chunk
    } else {
      end = RunEnd(s, i + 1, ClassOf(s[i]));
    }
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

Bpe Bpe::Learn(const std::vector<std::string>& documents, int64_t vocabulary) {
  Bpe bpe;
  for (int b = 0; b < 256; ++b) bpe.token_bytes_.emplace_back(1, static_cast<char>(b));
  std::unordered_map<std::string_view, int64_t> freq;
  for (const std::string& d : documents) {
    for (std::string_view chunk : PreTokenize(d)) ++freq[chunk];
  }
  // The distinct chunks in byte order (a deterministic order), as symbol sequences.
  std::vector<std::pair<std::string_view, int64_t>> chunks(freq.begin(), freq.end());
  std::sort(chunks.begin(), chunks.end());
  std::vector<std::vector<int64_t>> words;
  std::vector<int64_t> counts;
  for (const auto& [chunk, n] : chunks) {
    if (chunk.size() < 2) continue;
    words.emplace_back();
    for (char c : chunk) words.back().push_back(static_cast<unsigned char>(c));
    counts.push_back(n);
  }
  while (bpe.tokens() < vocabulary) {
    std::unordered_map<std::pair<int64_t, int64_t>, int64_t, PairHash> pairs;
    for (size_t w = 0; w < words.size(); ++w) {
      for (size_t i = 0; i + 1 < words[w].size(); ++i) {
        pairs[{words[w][i], words[w][i + 1]}] += counts[w];
      }
    }
    std::pair<int64_t, int64_t> best{-1, -1};
    int64_t best_count = 1;  // a pair must occur at least twice
    for (const auto& [pair, n] : pairs) {
      if (n > best_count || (n == best_count && best.first >= 0 && pair < best)) {
        best = pair;
        best_count = n;
      }
    }
    if (best.first < 0) break;
    const int64_t id = bpe.tokens();
    bpe.token_bytes_.push_back(bpe.token_bytes_[best.first] + bpe.token_bytes_[best.second]);
    bpe.merges_.push_back(best);
    for (auto& word : words) {
      size_t out = 0;
      for (size_t i = 0; i < word.size(); ++i, ++out) {
        if (i + 1 < word.size() && word[i] == best.first && word[i + 1] == best.second) {
          word[out] = id;
          ++i;
        } else {
          word[out] = word[i];
        }
      }
      word.resize(out);
    }
  }
  bpe.end_id_ = bpe.tokens();
  bpe.Index();
  return bpe;
}

void Bpe::Index() {
  std::fill(std::begin(byte_id_), std::end(byte_id_), -1);
  for (size_t id = 0; id < token_bytes_.size(); ++id) {
    if (token_bytes_[id].size() == 1) {
      byte_id_[static_cast<unsigned char>(token_bytes_[id][0])] = static_cast<int64_t>(id);
    }
  }
  rank_.clear();
  merged_.clear();
  std::unordered_map<std::string, int64_t> by_bytes;
  for (size_t id = 0; id < token_bytes_.size(); ++id) {
    by_bytes.emplace(token_bytes_[id], static_cast<int64_t>(id));
  }
  for (size_t r = 0; r < merges_.size(); ++r) {
    rank_.emplace(merges_[r], static_cast<int64_t>(r));
    merged_.push_back(
        by_bytes.at(token_bytes_[merges_[r].first] + token_bytes_[merges_[r].second]));
  }
}

void Bpe::EncodeChunk(std::string_view chunk, std::vector<int64_t>* out) const {
  std::vector<int64_t> ids;
  for (char c : chunk) ids.push_back(byte_id_[static_cast<unsigned char>(c)]);
  while (ids.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = rank_.find({ids[i], ids[i + 1]});
      if (it != rank_.end()) best = std::min(best, it->second);
    }
    if (best == std::numeric_limits<int64_t>::max()) break;
    const auto [left, right] = merges_[static_cast<size_t>(best)];
    size_t o = 0;
    for (size_t i = 0; i < ids.size(); ++i, ++o) {
      if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
        ids[o] = merged_[static_cast<size_t>(best)];
        ++i;
      } else {
        ids[o] = ids[i];
      }
    }
    ids.resize(o);
  }
  out->insert(out->end(), ids.begin(), ids.end());
}

void Bpe::Encode(std::string_view s, std::vector<int64_t>* out) const {
  for (std::string_view chunk : PreTokenize(s)) EncodeChunk(chunk, out);
}

std::string Bpe::Decode(std::span<const int64_t> ids, std::string_view end_text) const {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id >= 0 && id < tokens()) {
      s += token_bytes_[static_cast<size_t>(id)];
    } else if (id == end_id_) {
      s += end_text;
    } else if (id != pad_id()) {
      throw Error(ErrorCode::kInvalidArgument, "token " + std::to_string(i) + " is " +
                                                   std::to_string(id) +
                                                   ", not an id of this BPE vocabulary [0, " +
                                                   std::to_string(vocabulary()) + ")");
    }
  }
  return s;
}

void Bpe::ParseVocabulary(const std::string& text, const std::string& path) {
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    BadFile(path, 0, std::string("not JSON: ") + e.what());
  }
  if (!vocab.is_object()) BadFile(path, 0, "not a JSON object of token -> id");
  std::map<int64_t, std::string> by_id;
  int64_t end = -1, pad = -1;
  for (const auto& [name, value] : vocab.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      BadFile(path, 0, "token '" + name + "' has no id >= 0: " + value.dump());
    }
    const auto id = value.get<int64_t>();
    if (name == kEndName || name == kPadName) {
      (name == kEndName ? end : pad) = id;
      continue;
    }
    std::string bytes;
    if (!TokenBytes(name, &bytes)) {
      BadFile(path, 0, "token '" + name + "' is not in GPT-2's byte-to-unicode alphabet");
    }
    if (!by_id.emplace(id, bytes).second) {
      BadFile(path, 0, "id " + std::to_string(id) + " is given to two tokens");
    }
  }
  int64_t expect = 0;
  for (auto& [id, bytes] : by_id) {
    if (id != expect++) {
      BadFile(
          path, 0,
          "token ids must be 0..N-1 without gaps; " + std::to_string(expect - 1) + " is missing");
    }
    token_bytes_.push_back(std::move(bytes));
  }
  end_id_ = end >= 0 ? end : tokens();
  if (end_id_ != tokens() || (pad >= 0 && pad != end_id_ + 1)) {
    BadFile(path, 0,
            "the special tokens must follow the tokens: <|endoftext|> at " +
                std::to_string(tokens()) + ", <|pad|> after it");
  }
}

void Bpe::ParseMerges(const std::string& text, const std::string& path) {
  std::unordered_map<std::string, int64_t> by_bytes;
  for (size_t id = 0; id < token_bytes_.size(); ++id) {
    by_bytes.emplace(token_bytes_[id], static_cast<int64_t>(id));
  }
  ForEachLine(text, [&](std::string_view view, int64_t number) {
    const std::string line(view);
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) return;
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 ||
        line.find(' ', space + 1) != std::string::npos || space + 1 == line.size()) {
      BadFile(path, number, "a merge is two tokens separated by one space, got '" + line + "'");
    }
    std::string left, right;
    if (!TokenBytes(line.substr(0, space), &left) || !TokenBytes(line.substr(space + 1), &right)) {
      BadFile(path, number, "'" + line + "' holds a character outside GPT-2's alphabet");
    }
    const auto l = by_bytes.find(left), r = by_bytes.find(right);
    if (l == by_bytes.end() || r == by_bytes.end()) {
      BadFile(path, number, "'" + line + "' names a token vocab.json does not have");
    }
    if (by_bytes.find(left + right) == by_bytes.end()) {
      BadFile(path, number, "'" + line + "' merges into a token vocab.json does not have");
    }
    merges_.emplace_back(l->second, r->second);
  });
}

Bpe Bpe::Read(const std::string& vocab_json, const std::string& merges_txt) {
  return Parse(ReadTextFile(vocab_json, "BPE file"), ReadTextFile(merges_txt, "BPE file"),
               vocab_json, merges_txt);
}

Bpe Bpe::Parse(const std::string& vocab_text, const std::string& merges_text,
               const std::string& vocab_json, const std::string& merges_txt) {
  Bpe bpe;
  bpe.ParseVocabulary(vocab_text, vocab_json);
  bpe.ParseMerges(merges_text, merges_txt);
  bpe.Index();
  for (int b = 0; b < 256; ++b) {
    if (bpe.byte_id_[b] < 0) {
      BadFile(vocab_json, 0,
              "byte " + std::to_string(b) +
                  " has no token (a byte-level BPE "
                  "vocabulary has all 256)");
    }
  }
  return bpe;
}

void Bpe::Write(const std::string& vocab_json, const std::string& merges_txt) const {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (size_t id = 0; id < token_bytes_.size(); ++id) vocab[TokenName(token_bytes_[id])] = id;
  vocab[kEndName] = end_id_;
  vocab[kPadName] = pad_id();
  std::ofstream v(vocab_json, std::ios::binary);
  v << vocab.dump() << "\n";
  v.close();
  if (!v) throw Error(ErrorCode::kIo, "cannot write the BPE vocabulary", {.file = vocab_json});
  std::ofstream m(merges_txt, std::ios::binary);
  m << "#version: 0.2\n";
  for (const auto& [left, right] : merges_) {
    m << TokenName(token_bytes_[left]) << ' ' << TokenName(token_bytes_[right]) << '\n';
  }
  m.close();
  if (!m) throw Error(ErrorCode::kIo, "cannot write the BPE merges", {.file = merges_txt});
}

}  // namespace shardflow::text
