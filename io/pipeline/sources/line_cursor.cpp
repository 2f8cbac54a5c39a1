#include "io/pipeline/sources/line_cursor.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace shardflow::pipeline {

LineCursor::LineCursor(std::string path, const ByteRange& range, const LineCursorOptions& options)
    : ReadWindow(path, io::ResolveCompression(options.compression, path)),
      range_(range),
      options_(options) {
  if (options_.header_lines < 0) {
    throw Error(ErrorCode::kInvalidArgument, "header_lines must be >= 0", {.file = path_});
  }
  options_.read_buffer_bytes = std::max<size_t>(options_.read_buffer_bytes, 4096);
  const bool compressed = compression_ != io::Compression::kNone;
  if (compressed && !range.whole_file()) {
    throw Error(ErrorCode::kInvalidArgument,
                "a compressed text file cannot be read from a byte offset",
                {.file = path_, .offset = range.begin, .hint = "use shard_policy file or record"});
  }
  std::string_view text;
  uint64_t offset = 0;
  int64_t line = 0;
  if (range.begin == 0 || options_.header_lines > 0 || options_.exact_line_numbers) {
    OpenAt(0);
    for (int64_t h = 0; h < options_.header_lines; ++h) {
      if (!Next(&text, &offset, &line)) break;
    }
    if (next_offset_ >= range.begin) return;  // the header ends at or after `begin`
    if (options_.exact_line_numbers) {
      // Count the lines that start before `begin` (reading the prefix once).
      while (next_offset_ < range.begin && Next(&text, &offset, &line)) {
      }
      return;
    }
  }
  // Mid-file start: byte begin-1 is '\n' exactly when a line starts at `begin`; skipping through
  // the first '\n' at or after begin-1 lands on the first line starting in the range.
  OpenAt(range.begin - 1);
  next_line_ = -1;
  size_t length = 0;
  bool newline = false;
  if (ScanLine(&length, &newline)) {
    pos_ += length + (newline ? 1 : 0);
    next_offset_ += length + (newline ? 1 : 0);
  }
}

// The algorithm: memchr for '\n' in the unread bytes; when none, refill (which compacts and, for
// lines longer than the buffer, doubles it) and search only the new bytes.
bool LineCursor::ScanLine(size_t* length, bool* has_newline) {
  size_t scanned = 0;  // bytes after pos_ known to hold no '\n'
  for (;;) {
    const char* start = buf_.data() + pos_;
    const size_t avail = fill_ - pos_;
    if (const void* nl = std::memchr(start + scanned, '\n', avail - scanned)) {
      *length = static_cast<size_t>(static_cast<const char*>(nl) - start);
      *has_newline = true;
      return true;
    }
    scanned = avail;
    if (!Fill()) {
      if (fill_ == pos_) return false;
      *length = fill_ - pos_;
      *has_newline = false;
      return true;
    }
  }
}

bool LineCursor::Next(std::string_view* text, uint64_t* offset, int64_t* line) {
  if (next_offset_ >= range_.end) return false;
  size_t length = 0;
  bool newline = false;
  if (!ScanLine(&length, &newline)) return false;
  size_t text_length = length;
  if (newline && text_length > 0 && buf_[pos_ + text_length - 1] == '\r') --text_length;
  *text = std::string_view(buf_.data() + pos_, text_length);
  *offset = next_offset_;
  *line = next_line_;
  const size_t consumed = length + (newline ? 1 : 0);
  pos_ += consumed;
  next_offset_ += consumed;
  if (next_line_ >= 0) ++next_line_;
  return true;
}

void LineCursor::Seek(const ReaderPosition& p) {
  OpenAt(p.offset);
  next_line_ = p.record;
}

}  // namespace shardflow::pipeline
