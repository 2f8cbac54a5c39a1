// TFRecord compression: TensorFlow compresses the whole record stream (not each record) with
// zlib, either as a GZIP stream (windowBits 16+15) or a ZLIB stream (windowBits 15).
//
// InflatingFile and DeflatingFile wrap a file of the file interface and present the
// uncompressed stream, so the record reader and writer do not know about compression.
// Errors: a damaged compressed stream is kDataLoss ("corrupt GZIP stream: <zlib message>"), a
// stream that ends before its trailer is kDataLoss ("GZIP stream cut short"); both name the
// file and the byte offset in the compressed file.
#pragma once

#include <zlib.h>

#include <memory>
#include <string>
#include <vector>

#include "io/file.hpp"

namespace shardflow::io {

enum class Compression { kAuto, kNone, kGzip, kZlib };

// "none" | "gzip" | "zlib" | "auto".
const char* CompressionName(Compression c);
// Accepts the names above (and "" for none, case-insensitive GZIP/ZLIB as TensorFlow spells
// them); throws Error(kInvalidArgument).
Compression ParseCompression(const std::string& name);
// kAuto resolves by suffix: ".gz" -> kGzip, ".zlib" -> kZlib, else kNone. Others pass through.
Compression ResolveCompression(Compression c, const std::string& path);

class InflatingFile final : public SequentialFile {
 public:
  // REQUIRES: kind is kGzip or kZlib. `input_buffer_size` bytes are read from `base` at a time.
  // GZIP files may hold several members back to back (as `cat a.gz b.gz` makes); they are read
  // as one stream. Bytes after the end of a ZLIB stream are kDataLoss.
  InflatingFile(std::unique_ptr<SequentialFile> base, Compression kind,
                size_t input_buffer_size = 1 << 20);
  ~InflatingFile() override;

  Status Read(size_t n, char* scratch, size_t* bytes_read) override;
  Status Skip(uint64_t n) override;
  const std::string& name() const override { return base_->name(); }

 private:
  Status Refill();

  std::unique_ptr<SequentialFile> base_;
  Compression kind_;
  z_stream stream_{};
  std::vector<unsigned char> input_;
  uint64_t compressed_offset_ = 0;  // bytes consumed from base_ so far
  bool input_eof_ = false;
  bool stream_end_ = false;  // the current member/stream ended
  bool done_ = false;        // no more output
  Status pending_;           // an error met after some output was produced; returned next
};

class DeflatingFile final : public WritableFile {
 public:
  // REQUIRES: kind is kGzip or kZlib. level: zlib's 0..9 or Z_DEFAULT_COMPRESSION.
  DeflatingFile(std::unique_ptr<WritableFile> base, Compression kind,
                int level = Z_DEFAULT_COMPRESSION);
  ~DeflatingFile() override;

  Status Append(std::string_view data) override;
  // Flushes compressed output so far (Z_SYNC_FLUSH); the stream stays open.
  Status Flush() override;
  // Writes the stream trailer and closes the base file.
  Status Close() override;
  const std::string& name() const override { return base_->name(); }

 private:
  Status Deflate(int flush);

  std::unique_ptr<WritableFile> base_;
  z_stream stream_{};
  std::vector<unsigned char> output_;
  bool closed_ = false;
};

}  // namespace shardflow::io
