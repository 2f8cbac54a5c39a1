// FixedLengthRecordSource: files of fixed-size records after an optional header (raw image
// dumps, IDX bodies, binary feature matrices) — tf.data's FixedLengthRecordDataset.
//
// Record k of a file starts at header_bytes + k * record_bytes and becomes feature "bytes":
// uint8[record_bytes]. Byte ranges are supported (record boundaries are computable). A file
// whose body is not a whole number of records is reported as a truncated last record
// (kDataLoss naming file, offset and record) when the reader reaches it. File sizes and mtimes
// are taken at construction (a missing file: kNotFound naming it).
// Thread-safety: Open() may be called concurrently; each reader has its own file handle.
#pragma once

#include <string>
#include <vector>

#include "io/pipeline/record_source.hpp"

namespace shardflow::pipeline {

class FixedLengthRecordSource : public RecordSource {
 public:
  // REQUIRES: record_bytes > 0 (Error(kInvalidArgument) otherwise).
  FixedLengthRecordSource(std::vector<std::string> files, uint64_t record_bytes,
                          uint64_t header_bytes = 0);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return true; }
  std::string FormatDescription() const override;

 private:
  std::vector<FileInfo> infos_;
  uint64_t record_bytes_, header_bytes_;
};

}  // namespace shardflow::pipeline
