#include "io/pipeline/sources/text_line_source.hpp"

#include <cstring>
#include <utility>

namespace shardflow::pipeline {
namespace {

class TextLineReader : public RecordReader {
 public:
  TextLineReader(const std::string& path, const ByteRange& range, const LineCursorOptions& o)
      : cursor_(path, range, o) {}

  bool Next(Element* out) override {
    std::string_view text;
    uint64_t offset = 0;
    int64_t line = 0;
    if (!cursor_.Next(&text, &offset, &line)) return false;
    Tensor t(DType::kUInt8, {static_cast<int64_t>(text.size())});
    if (!text.empty()) std::memcpy(t.raw_data(), text.data(), text.size());
    out->features.clear();
    out->features.emplace_back("line", std::move(t));
    out->where.record = line;
    out->where.offset = offset;
    return true;
  }
  ReaderPosition Position() const override { return cursor_.Position(); }
  void Seek(const ReaderPosition& p) override { cursor_.Seek(p); }

 private:
  LineCursor cursor_;
};

}  // namespace

TextLineSource::TextLineSource(std::vector<std::string> files, const TextLineOptions& options)
    : options_(options) {
  if (options.header_lines < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "header_lines must be >= 0, got " + std::to_string(options.header_lines));
  }
  for (auto& f : files) {
    infos_.push_back(StatFile(f));
    if (io::ResolveCompression(options.compression, f) != io::Compression::kNone) {
      byte_ranges_ = false;
    }
  }
}

LineCursorOptions TextLineSource::CursorOptions() const {
  return {.compression = options_.compression,
          .header_lines = options_.header_lines,
          .exact_line_numbers = options_.exact_line_numbers,
          .read_buffer_bytes = options_.read_buffer_bytes};
}

std::unique_ptr<RecordReader> TextLineSource::Open(size_t file_index,
                                                   const ByteRange& range) const {
  if (file_index >= infos_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<TextLineReader>(infos_[file_index].name, range, CursorOptions());
}

std::string TextLineSource::FormatDescription() const {
  return std::string("text(compression=") + io::CompressionName(options_.compression) +
         ",header_lines=" + std::to_string(options_.header_lines) + ")";
}

std::shared_ptr<const RecordSource> OpenTextLineSource(const std::vector<std::string>& files,
                                                       const TextLineOptions& options) {
  return std::make_shared<TextLineSource>(files, options);
}

}  // namespace shardflow::pipeline
