#include "io/read_window.hpp"

#include <cstring>

#include "core/error.hpp"

namespace shardflow::io {

void ReadWindow::OpenAt(uint64_t offset, size_t buffer_bytes) {
  file_ = FileSystem::Default()->NewSequentialFile(path_);
  if (compression_ != Compression::kNone) {
    file_ = std::make_unique<InflatingFile>(std::move(file_), compression_);
  }
  if (offset > 0) ThrowIfError(file_->Skip(offset));
  if (buf_.size() < buffer_bytes) buf_.resize(buffer_bytes);
  pos_ = fill_ = 0;
  eof_ = false;
  next_offset_ = offset;
}

bool ReadWindow::Fill() {
  if (eof_) return false;
  if (pos_ > 0) {  // keep the unread bytes at the front
    std::memmove(buf_.data(), buf_.data() + pos_, fill_ - pos_);
    fill_ -= pos_;
    pos_ = 0;
  }
  if (fill_ == buf_.size()) buf_.resize(buf_.size() * 2);  // a record longer than the buffer
  size_t got = 0;
  Status s = file_->Read(buf_.size() - fill_, buf_.data() + fill_, &got);
  if (!s.ok()) {
    if (s.context().file.empty()) s.mutable_context().file = path_;
    throw Error(std::move(s));
  }
  if (got == 0) {
    eof_ = true;
    return false;
  }
  fill_ += got;
  return true;
}

}  // namespace shardflow::io
