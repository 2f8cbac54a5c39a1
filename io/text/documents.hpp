// Documents from text files, the first step of a text pipeline: where one document ends.
//
//   line        every line is a document (its newline, and a '\r' before it, removed)
//   file        every file is one document (its bytes as they are)
//   DELIMITER   a line holding exactly DELIMITER ends a document (the fortune-file convention:
//               "%"); the document is the lines before it, newlines kept between them
// Files are read in the order given; documents keep their bytes (no UTF-8 check: a byte-level
// tokenizer takes any bytes). A document that is empty or only whitespace is skipped and
// counted. A file that cannot be read is Error(kIo) naming it.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::text {

struct Document {
  std::string text;
  int64_t file = 0;   // index into the files read
  int64_t index = 0;  // the document's position among its file's documents (empty ones too)
};

struct DocumentCounts {
  int64_t documents = 0;
  int64_t empty_skipped = 0;
};

// "line", "file" or a delimiter line; throws Error(kInvalidArgument) naming `key` for an empty
// delimiter or one holding a newline.
void CheckDocumentSplit(const std::string& split, const std::string& key);

// The documents of `bytes` (one file's contents) split by `split`, appended to *out.
void SplitDocuments(const std::string& bytes, const std::string& split, int64_t file,
                    std::vector<Document>* out, DocumentCounts* counts);

// Every file's documents, files in the order given.
std::vector<Document> ReadDocuments(const std::vector<std::string>& files, const std::string& split,
                                    DocumentCounts* counts);

}  // namespace shardflow::text
