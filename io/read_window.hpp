// ReadWindow: a file read forward through a growable buffer of unread bytes, the base of the
// text readers that scan records of any length (pipeline/sources/line_cursor, csv_stream).
//
// The unread bytes are buf_[pos_, fill_) and buf_[pos_] is at uncompressed file offset
// next_offset_; a reader consumes by advancing pos_ and next_offset_ together. Fill() moves the
// unread bytes to the front and reads more after them, doubling the buffer when it is full of
// unread bytes (one record longer than the buffer). gzip/zlib files are read inflated.
// Thread-safety: none (one reader per window).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/compression.hpp"
#include "io/file.hpp"

namespace shardflow::io {

class ReadWindow {
 protected:
  ReadWindow(std::string path, Compression compression)
      : path_(std::move(path)), compression_(compression) {}

  // (Re)opens the file positioned at uncompressed `offset`, with a buffer of at least
  // `buffer_bytes`. Throws Error naming the file when it cannot be opened or skipped.
  void OpenAt(uint64_t offset, size_t buffer_bytes);
  // Reads more bytes; false at end of file. Throws Error naming the file on a read error.
  bool Fill();

  std::string path_;
  Compression compression_;
  std::unique_ptr<SequentialFile> file_;
  std::string buf_;
  size_t pos_ = 0, fill_ = 0;  // unread bytes are buf_[pos_, fill_)
  uint64_t next_offset_ = 0;   // file offset of buf_[pos_]
  bool eof_ = false;
};

}  // namespace shardflow::io
