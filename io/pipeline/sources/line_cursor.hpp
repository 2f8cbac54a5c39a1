// LineCursor: the lines of one text file (plain or GZIP) whose first byte lies in a byte range —
// the shared core of the text-line and JSON-lines sources.
//
// Lines end at '\n'; a '\r' right before it is dropped (CRLF files), and a last line without a
// newline is a line. Empty lines are lines (tf.data's TextLineDataset behaves the same); the
// empty tail after a final '\n' is not.
// Byte ranges (plain files only): a line belongs to the range holding its first byte. A cursor
// starting at begin > 0 looks at byte begin-1 and skips through the next '\n' (so a line
// starting exactly at `begin` is kept), then yields lines while their first byte is < end —
// the last one may run past `end`. The first `header_lines` lines of the file are never yielded,
// whatever the range. GZIP files support only the whole-file range (no random access into a
// deflate stream); offsets are then offsets in the uncompressed text.
// Line numbers (0-based, header lines counted) are known when the cursor starts at the file's
// start; a cursor starting mid-file counts the newlines before `begin` when
// `exact_line_numbers`, else reports -1 (errors then name the byte offset).
// Errors: a missing file is kNotFound, read failures kIo, a damaged GZIP stream kDataLoss, all
// naming the file (and offset).
// Thread-safety: one cursor per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/compression.hpp"
#include "io/file.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/read_window.hpp"

namespace shardflow::pipeline {

struct LineCursorOptions {
  io::Compression compression = io::Compression::kAuto;  // kAuto: ".gz" -> GZIP
  int64_t header_lines = 0;
  bool exact_line_numbers = false;
  size_t read_buffer_bytes = size_t{1} << 18;
};

class LineCursor : private io::ReadWindow {
 public:
  // REQUIRES: a whole-file range for a compressed file (Error(kInvalidArgument) otherwise).
  LineCursor(std::string path, const ByteRange& range, const LineCursorOptions& options);

  // The next line of the range (without '\n' / "\r\n"); the view is valid until the next call.
  // *offset: byte offset of the line's first byte; *line: line number or -1 (see above).
  bool Next(std::string_view* text, uint64_t* offset, int64_t* line);

  // Offset of the next line's first byte and its line number: a resume point for Seek().
  ReaderPosition Position() const { return {next_offset_, next_line_}; }
  // REQUIRES: `p` came from Position() of a cursor over the same file, range and options.
  void Seek(const ReaderPosition& p);
  const std::string& path() const { return path_; }

 private:
  // (Re)opens the file positioned at uncompressed `offset`.
  void OpenAt(uint64_t offset) { ReadWindow::OpenAt(offset, options_.read_buffer_bytes); }
  // Finds the next '\n' from buf_[pos_]; reads more as needed. Returns the line length and sets
  // *has_newline; false at end of file with nothing left.
  bool ScanLine(size_t* length, bool* has_newline);
  void SkipHeader();

  ByteRange range_;
  LineCursorOptions options_;
  int64_t next_line_ = 0;  // -1 when unknown
};

}  // namespace shardflow::pipeline
