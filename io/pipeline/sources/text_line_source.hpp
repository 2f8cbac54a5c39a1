// TextLineSource: one element per line of one or many text files, plain or GZIP —
// tf.data's TextLineDataset as a RecordSource.
//
// Element: feature "line": uint8[n] (the line's bytes without "\n" / "\r\n"); where.record = the
// line number in its file (0-based, header lines counted; -1 for a byte-range reader started
// mid-file unless exact_line_numbers), where.offset = byte offset of the line's first byte
// (in the uncompressed text). Line rules and byte ranges: see line_cursor.hpp — a line belongs
// to the range holding its first byte, so byte_range sharding reads every line exactly once.
// Byte ranges are supported when no file is compressed (SupportsByteRanges()); with GZIP files
// use the file or record shard policy.
// File sizes and mtimes are taken at construction (a missing file: kNotFound naming it).
// Thread-safety: Open() may be called concurrently; each reader has its own file handle.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/line_cursor.hpp"

namespace shardflow::pipeline {

struct TextLineOptions {
  // none | gzip | zlib | auto (".gz" -> gzip, ".zlib" -> zlib). Default auto.
  io::Compression compression = io::Compression::kAuto;
  // Lines skipped at the start of every file (CSV headers). Default 0.
  int64_t header_lines = 0;
  // Count newlines before a mid-file byte range so where.record is exact (reads the prefix of
  // the file once per reader). Default false: where.record = -1 for mid-file readers.
  bool exact_line_numbers = false;
  // Read size; a longer line grows the buffer. Default 256 KiB.
  size_t read_buffer_bytes = size_t{1} << 18;
};

class TextLineSource : public RecordSource {
 public:
  TextLineSource(std::vector<std::string> files, const TextLineOptions& options);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return byte_ranges_; }
  std::string FormatDescription() const override;

  LineCursorOptions CursorOptions() const;

 private:
  std::vector<FileInfo> infos_;
  TextLineOptions options_;
  bool byte_ranges_ = true;
};

// The registration function the format registry calls ("text").
std::shared_ptr<const RecordSource> OpenTextLineSource(const std::vector<std::string>& files,
                                                       const TextLineOptions& options = {});

}  // namespace shardflow::pipeline
