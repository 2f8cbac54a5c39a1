// FixedLengthRecordSource: files of fixed-size records between an optional header and footer
// (raw image dumps, IDX bodies, CIFAR-10's binary batches: 1 label byte + 3072 pixel bytes per
// record) — tf.data's FixedLengthRecordDataset.
//
// Record k of a file starts at header_bytes + k * record_bytes and becomes feature "bytes":
// uint8[record_bytes]; where.record = k, where.offset = its byte offset. The body of a file is
// size - header_bytes - footer_bytes. Byte ranges are supported and land exactly on record
// boundaries: a reader of [begin, end) yields the records whose first byte lies in it.
// A body that is not a whole number of records: with tail = kFail (the default) construction
// throws Error(kDataLoss) naming the file, its size and the partial record; with kSkip the
// partial tail is never read and its bytes are counted in counters().dropped_bytes (and logged).
// A file shorter than header + footer is always Error(kDataLoss) naming file and size.
// File sizes and mtimes are taken at construction (a missing file: kNotFound naming it).
// Thread-safety: Open() may be called concurrently; each reader has its own file handle.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::pipeline {

struct FixedLengthOptions {
  uint64_t record_bytes = 0;      // REQUIRED, > 0 (CIFAR-10: 3073)
  uint64_t header_bytes = 0;      // skipped at the start of every file. Default 0.
  uint64_t footer_bytes = 0;      // skipped at the end of every file. Default 0.
  OnError tail = OnError::kFail;  // a partial last record: fail (default) or drop and count
  // The setting that chooses `tail`, named in the error's hint ("data.tail", "input.on_error").
  std::string tail_key = "tail";
};

class FixedLengthRecordSource : public RecordSource {
 public:
  // REQUIRES: options.record_bytes > 0 (Error(kInvalidArgument) otherwise).
  FixedLengthRecordSource(std::vector<std::string> files, const FixedLengthOptions& options);
  // Shorthand: no footer, tail = kFail.
  FixedLengthRecordSource(std::vector<std::string> files, uint64_t record_bytes,
                          uint64_t header_bytes = 0);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return true; }
  std::string FormatDescription() const override;
  const SourceCounters& counters() const { return *counters_; }

 private:
  std::vector<FileInfo> infos_;
  FixedLengthOptions options_;
  std::shared_ptr<SourceCounters> counters_ = std::make_shared<SourceCounters>();
};

// The registration function the format registry calls ("fixed").
std::shared_ptr<const RecordSource> OpenFixedLengthSource(const std::vector<std::string>& files,
                                                          const FixedLengthOptions& options);

}  // namespace shardflow::pipeline
