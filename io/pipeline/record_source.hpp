// RecordSource: the seam between the pipeline and record formats (TFRecord, HDF5, CSV, ...).
//
// A format plugs into the pipeline by implementing two small interfaces:
//  - RecordSource: the list of files (name, size, mtime, record count if known) and Open(i,
//    range), which returns a reader over the records of file i whose first byte lies in
//    [range.begin, range.end). Formats that can find a record boundary from an arbitrary byte
//    offset (TFRecord by scanning for a valid header CRC; fixed-length records; HDF5 by row)
//    return true from SupportsByteRanges(); the byte_range shard policy needs it.
//  - RecordReader: Next() yields one record as an Element (e.g. feature "bytes": uint8[n], or
//    parsed features) and fills where.record (index in the file; -1 when the reader started
//    mid-file and cannot know it) and where.offset (byte offset, or row index for row formats).
//    It returns false at a clean end, and throws Error(kDataLoss) for a truncated or corrupt
//    record and Error(kIo/kNotFound) for I/O failures, with file/offset/record in the context.
//    Position()/Seek() give an opaque resume point for iterator state.
// The pipeline fills in id, file and file_index, and adds the stage name to errors.
// Thread-safety: Open() may be called from several threads at once; a reader is used by one
// thread at a time.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

struct FileInfo {
  std::string name;
  uint64_t size_bytes = 0;
  int64_t mtime_ns = 0;
  int64_t num_records = -1;  // -1: unknown without reading
};

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = std::numeric_limits<uint64_t>::max();
  bool whole_file() const { return begin == 0 && end == std::numeric_limits<uint64_t>::max(); }
};

// Where a reader is: enough to reopen and continue. Formats choose the meaning of the fields
// (typically the byte offset of the next record and its record index).
struct ReaderPosition {
  uint64_t offset = 0;
  int64_t record = 0;
};

class RecordReader {
 public:
  virtual ~RecordReader() = default;
  virtual bool Next(Element* out) = 0;
  virtual ReaderPosition Position() const = 0;
  // REQUIRES: `position` came from Position() of a reader over the same file and range.
  virtual void Seek(const ReaderPosition& position) = 0;
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual const std::vector<FileInfo>& Files() const = 0;
  virtual std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const = 0;
  virtual bool SupportsByteRanges() const { return false; }
  // Format and parsing settings, e.g. "tfrecord(compression=none)"; part of cache keys.
  virtual std::string FormatDescription() const = 0;
};

// Stats for a file on disk: size and mtime; throws Error(kNotFound) naming it when missing.
FileInfo StatFile(const std::string& path);

}  // namespace shardflow::pipeline
