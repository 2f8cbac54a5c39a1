#include "io/text/documents.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace shardflow::text {
namespace {

bool Blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

void Add(std::string text, int64_t file, int64_t index, std::vector<Document>* out,
         DocumentCounts* counts) {
  if (Blank(text)) {
    ++counts->empty_skipped;
    return;
  }
  ++counts->documents;
  out->push_back({std::move(text), file, index});
}

// The lines of `bytes` without their '\n' (and a '\r' before it); a last line without a
// newline counts, an empty tail after the last newline does not.
std::vector<std::string> Lines(const std::string& bytes) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    size_t stop = end;
    if (stop > start && bytes[stop - 1] == '\r') --stop;
    lines.push_back(bytes.substr(start, stop - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

void CheckDocumentSplit(const std::string& split, const std::string& key) {
  if (split.empty() || split.find('\n') != std::string::npos) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "a document split is line, file or a delimiter line without newlines, got '" + split + "'",
        {.key = key});
  }
}

void SplitDocuments(const std::string& bytes, const std::string& split, int64_t file,
                    std::vector<Document>* out, DocumentCounts* counts) {
  if (split == "file") {
    Add(bytes, file, 0, out, counts);
    return;
  }
  int64_t index = 0;
  if (split == "line") {
    for (std::string& line : Lines(bytes)) Add(std::move(line), file, index++, out, counts);
    return;
  }
  std::string doc;
  bool open = false;  // lines since the last delimiter
  for (const std::string& line : Lines(bytes)) {
    if (line == split) {
      Add(std::move(doc), file, index++, out, counts);
      doc.clear();
      open = false;
      continue;
    }
    if (open) doc += '\n';
    doc += line;
    open = true;
  }
  if (open) Add(std::move(doc), file, index, out, counts);
}

std::vector<Document> ReadDocuments(const std::vector<std::string>& files, const std::string& split,
                                    DocumentCounts* counts) {
  std::vector<Document> out;
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream in(files[f], std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in.good() && !in.eof()) {
      throw Error(ErrorCode::kIo, "cannot read the text file", {.file = files[f]});
    }
    if (!in.is_open()) throw Error(ErrorCode::kIo, "cannot open the text file", {.file = files[f]});
    SplitDocuments(bytes.str(), split, static_cast<int64_t>(f), &out, counts);
  }
  return out;
}

}  // namespace shardflow::text
