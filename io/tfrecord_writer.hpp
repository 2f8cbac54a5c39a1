// TFRecordWriter: writes records in TFRecord framing (io/tfrecord_format.hpp), optionally as
// one GZIP or ZLIB stream, so TensorFlow's TFRecordDataset reads the file.
//
//   TFRecordWriter writer("out.tfrecord.gz");   // compression from the suffix
//   writer.Write(example_bytes);
//   writer.Close();                               // the destructor closes too, ignoring errors
//
// Errors: Error(kIo) naming the file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "io/compression.hpp"
#include "io/file.hpp"

namespace shardflow::io {

struct TFRecordWriterOptions {
  Compression compression = Compression::kAuto;  // kAuto: by suffix (.gz, .zlib)
  int compression_level = 6;                     // zlib level; higher is smaller and slower
  FileSystem* file_system = nullptr;             // nullptr: FileSystem::Default()
};

class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path, TFRecordWriterOptions options = {});
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Appends one record. Throws Error(kIo); REQUIRES: not closed.
  void Write(std::string_view data);
  void Flush();
  void Close();

  // Bytes of framing + data written so far (uncompressed).
  uint64_t bytes_written() const { return bytes_written_; }
  int64_t records_written() const { return records_written_; }

 private:
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  uint64_t bytes_written_ = 0;
  int64_t records_written_ = 0;
};

// Frames `data` as one TFRecord (header + data + footer) appended to *out. For tests and tools.
void AppendTFRecord(std::string_view data, std::string* out);

}  // namespace shardflow::io
