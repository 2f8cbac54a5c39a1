#include "io/tfrecord_writer.hpp"

#include "io/crc32c.hpp"
#include "io/tfrecord_format.hpp"

namespace shardflow::io {

namespace {
void EncodeHeader(uint64_t length, char* header) {
  tfrecord::EncodeFixed64(header, length);
  tfrecord::EncodeFixed32(header + tfrecord::kLengthSize,
                          crc32c::Mask(crc32c::Value(header, tfrecord::kLengthSize)));
}
}  // namespace

void AppendTFRecord(std::string_view data, std::string* out) {
  char header[tfrecord::kHeaderSize];
  char footer[tfrecord::kFooterSize];
  EncodeHeader(data.size(), header);
  tfrecord::EncodeFixed32(footer, crc32c::Mask(crc32c::Value(data)));
  out->append(header, sizeof(header));
  out->append(data);
  out->append(footer, sizeof(footer));
}

TFRecordWriter::TFRecordWriter(std::string path, TFRecordWriterOptions options)
    : path_(std::move(path)) {
  FileSystem* fs = options.file_system ? options.file_system : FileSystem::Default();
  const Compression compression = ResolveCompression(options.compression, path_);
  file_ = fs->NewWritableFile(path_);
  if (compression != Compression::kNone) {
    file_ =
        std::make_unique<DeflatingFile>(std::move(file_), compression, options.compression_level);
  }
}

TFRecordWriter::~TFRecordWriter() {
  if (file_) (void)file_->Close();
}

void TFRecordWriter::Write(std::string_view data) {
  if (!file_) throw Error(ErrorCode::kInternal, "write after Close", {.file = path_});
  char header[tfrecord::kHeaderSize];
  char footer[tfrecord::kFooterSize];
  EncodeHeader(data.size(), header);
  tfrecord::EncodeFixed32(footer, crc32c::Mask(crc32c::Value(data)));
  ThrowIfError(file_->Append(std::string_view(header, sizeof(header))));
  ThrowIfError(file_->Append(data));
  ThrowIfError(file_->Append(std::string_view(footer, sizeof(footer))));
  bytes_written_ += data.size() + tfrecord::kFramingSize;
  ++records_written_;
}

void TFRecordWriter::Flush() {
  if (file_) ThrowIfError(file_->Flush());
}

void TFRecordWriter::Close() {
  if (!file_) return;
  Status s = file_->Close();
  file_.reset();
  ThrowIfError(std::move(s));
}

}  // namespace shardflow::io
