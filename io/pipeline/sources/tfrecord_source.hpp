// TFRecordSource: TFRecord files as a RecordSource (record_source.hpp).
//
// Each record becomes an Element with one feature, "record": uint8 [n], a copy of the
// serialized bytes (usually a tf.train.Example; decode with MakeExampleDecoder). where.offset
// is the byte offset of the record's header (uncompressed bytes for .gz/.zlib), where.record
// its index in the file, or -1 when the reader started mid-file (byte ranges).
// Compression: TFRecordSourceOptions::compression, kAuto choosing by suffix (.gz, .zlib).
// Byte ranges: supported when every file is uncompressed (a compressed stream cannot be
// entered mid-way); the reader starts at the first valid record boundary at or after the
// range's start (io/tfrecord_reader.hpp).
// on_corrupt: kFail raises Error(kDataLoss) naming file, offset and record; kSkip drops the
// damaged region (logged once per event with its size) and goes on. The same holds for a record
// whose float features (finite_features) hold a NaN or Inf: a bad record, failed or skipped.
// Resume: Position() is (offset of the next record, records read in this range); Seek()
// reopens the file at that offset (uncompressed) or re-reads and discards records (compressed).
// RecordOffsets (RecordIndex) scans the 12-byte headers of uncompressed files with pread (no
// data read, no CRCs) and reads compressed files through without CRC checks; results are cached
// by (path, size, mtime). Thread-safety: Open and RecordOffsets may run concurrently.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_annotations.hpp"
#include "io/compression.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/record_index.hpp"
#include "io/tfrecord_reader.hpp"

namespace shardflow::pipeline {

struct TFRecordSourceOptions {
  io::Compression compression = io::Compression::kAuto;
  io::OnCorrupt on_corrupt = io::OnCorrupt::kFail;
  // Float features whose values must be finite (data.check_finite): a record holding a NaN or
  // Inf in one is, under on_corrupt kFail, Error(kDataLoss) naming file, offset, record and
  // feature; under kSkip it is dropped, logged (the first 10) and counted.
  std::vector<std::string> finite_features;
  size_t buffer_size = 1 << 20;
};

class TFRecordSource : public RecordSource, public RecordIndex {
 public:
  // Stats every file (Error(kNotFound) naming a missing one).
  TFRecordSource(std::vector<std::string> files, TFRecordSourceOptions options = {});

  const std::vector<FileInfo>& Files() const override { return files_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return all_uncompressed_; }
  std::string FormatDescription() const override;
  std::vector<uint64_t> RecordOffsets(size_t file_index) const override;

  // Records dropped so far for a non-finite float feature (on_corrupt kSkip), by every reader.
  int64_t nonfinite_skipped() const { return nonfinite_skipped_->load(); }

  // The compression used for `path` under `option` (kAuto: by suffix).
  static io::Compression CompressionFor(const std::string& path, io::Compression option);

 private:
  // Shared with the readers (they may outlive a pass); atomic: readers run on several threads.
  std::shared_ptr<std::atomic<int64_t>> nonfinite_skipped_ =
      std::make_shared<std::atomic<int64_t>>(0);
  std::vector<FileInfo> files_;
  TFRecordSourceOptions options_;
  bool all_uncompressed_ = true;
  mutable Mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const std::vector<uint64_t>>> offsets_cache_
      GUARDED_BY(mu_);
};

}  // namespace shardflow::pipeline
