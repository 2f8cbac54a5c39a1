#include "io/vocabulary_file.hpp"

#include <fstream>

#include "core/error.hpp"

namespace shardflow::io {

std::string EscapeVocabularyValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

std::string UnescapeVocabularyValue(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      out += line[i];
      continue;
    }
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (next != '\\' && next != 'n' && next != 'r') {
      throw Error(ErrorCode::kInvalidArgument, "bad escape in a vocabulary value at byte " +
                                                   std::to_string(i) +
                                                   ": only \\\\, \\n and \\r are escapes");
    }
    out += next == 'n' ? '\n' : next == 'r' ? '\r' : '\\';
    ++i;
  }
  return out;
}

void WriteVocabularyFile(const std::string& path, const std::vector<std::string>& values) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& v : values) out << EscapeVocabularyValue(v) << '\n';
  out.close();
  if (!out) throw Error(ErrorCode::kIo, "cannot write the vocabulary", {.file = path});
}

std::vector<std::string> ReadVocabularyFile(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kNotFound, "no vocabulary file", {.file = path, .key = key});
  }
  std::vector<std::string> words;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    try {
      words.push_back(UnescapeVocabularyValue(line));
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, e.status().message(),
                  {.file = path + ":" + std::to_string(number), .key = key});
    }
  }
  return words;
}

}  // namespace shardflow::io
