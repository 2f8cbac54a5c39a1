// Reading the tokenizers' files (vocab.json, merges.txt, vocab.txt, a lookup's words): the
// whole file, and its lines with their numbers for errors.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shardflow::text {

// The file's bytes. Error(kNotFound) "cannot open the WHAT" naming the file when it cannot be
// opened; Error(kIo) when reading fails.
std::string ReadTextFile(const std::string& path, const std::string& what);

// Calls fn(line, number) for every line of `text`, numbered from 1, without its '\n' or a '\r'
// before it (a Windows editor's line end). A last line without '\n' counts; an empty text has no
// line.
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  int64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(line, ++number);
    start = end + 1;
  }
}

}  // namespace shardflow::text
