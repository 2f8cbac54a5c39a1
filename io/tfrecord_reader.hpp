// TFRecordReader: reads the records of one TFRecord file (io/tfrecord_format.hpp).
//
//   TFRecordReader reader("train-00000-of-00008.tfrecord");
//   TFRecordReader::Record record;
//   while (reader.Next(&record)) Use(record.data);  // record.data views the read buffer
//
// Outcomes of reading a record: a record; clean end of file (Next returns false); a truncated
// record (the file ends inside a header or inside data + data CRC); a corrupted record (bad
// length CRC, bad data CRC, length beyond max_record_bytes). Errors are Error/Status(kDataLoss)
// carrying the file, the byte offset of the record's first header byte and its record index
// (for a compressed file the offset counts uncompressed bytes). I/O failures are kIo.
//
// on_corrupt = kSkip: a damaged record is dropped, the reader resynchronises at the next
// position where a length CRC and then a data CRC verify (after a bad data CRC with a good
// length CRC it first tries the position the length points to), counts one dropped record and
// the bytes between the damaged record and the resynchronisation point, and goes on. Totals are
// in skipped(); each event also goes to the optional CorruptionReporter. Damage inside a
// compressed stream cannot be skipped (the stream cannot be resynchronised): the records before
// it are delivered, then the error is raised under either policy.
//
// Byte ranges (uncompressed files only): with [begin, end), the reader starts at the first
// valid record boundary at or after `begin` (a candidate must pass the length CRC, the data CRC
// and the length CRC of the header after it, or end the file) and reads every record that
// starts before `end`. Readers of adjacent ranges together read every record exactly once; the
// reader whose range holds a damaged record reports it (a reader also validates the first record
// at or after `end`, so damage right after a split point is reported by the range before it).
// Record indices then count from the start of the range. Limitation (inherent to an index-free
// format): record data that itself contains two or more complete, consecutive TFRecord-framed
// records can pass for a boundary when a split point falls inside it.
//
// Truncation vs corruption: a header whose length CRC verifies but whose data runs past the end
// of the file is a truncated record; a length above max_record_bytes is corruption (so a length
// of 2^60 is rejected before anything is allocated or read).
//
// Zero copy: Record::data points into the reader's buffer when the record lies inside it (the
// common case); it stays valid until the next call on the reader.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "io/compression.hpp"
#include "io/file.hpp"

namespace shardflow::io {

enum class OnCorrupt { kFail, kSkip };
// "fail" | "skip"; throws Error(kInvalidArgument).
OnCorrupt ParseOnCorrupt(const std::string& name);

// Receives every dropped region under on_corrupt = kSkip.
class CorruptionReporter {
 public:
  virtual ~CorruptionReporter() = default;
  // `bytes` were dropped starting at reason.context().offset; reason says why.
  virtual void Corruption(uint64_t bytes, const Status& reason) = 0;
};

struct TFRecordReaderOptions {
  // kAuto picks by suffix (.gz, .zlib).
  Compression compression = Compression::kAuto;
  OnCorrupt on_corrupt = OnCorrupt::kFail;
  // Size of the read buffer; it also grows to hold a record larger than this. A reader reuses
  // the buffer (grown or not) of the previous reader destroyed on the same thread with the same
  // buffer_size, up to 64 MiB, so that reading file after file does not fault in fresh pages.
  size_t buffer_size = 1 << 20;
  // Bytes asked of the file per read call (at most; at least 64). The data CRC is extended
  // over each piece right after it is read, while it is in cache. Measured with
  // `shardflow-bench read` (BENCHMARKS.md): reading 512 KiB at a time and checking it at once
  // beat reading the whole 1 MiB buffer and checking it afterwards.
  size_t read_size = 512 << 10;
  // Turning checks off saves the CRC time (~0.1 ns/byte) but loses corruption detection;
  // byte ranges and resynchronisation always check.
  bool verify_checksums = true;
  // Map an uncompressed file instead of reading it (where the file system can): records then
  // view the page cache directly, saving the copy into the read buffer. Off by default: a file
  // truncated by another process while mapped raises SIGBUS instead of an error.
  bool use_mmap = false;
  // A header announcing more data than this is corrupt (never allocated). TensorFlow's
  // protobufs are limited to 2 GiB.
  uint64_t max_record_bytes = uint64_t{1} << 31;
  // Byte range [begin, end) of an uncompressed file; the default reads the whole file.
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;
  FileSystem* file_system = nullptr;       // nullptr: FileSystem::Default()
  CorruptionReporter* reporter = nullptr;  // not owned; may be nullptr
};

class TFRecordReader {
 public:
  struct Record {
    std::string_view data;
    uint64_t offset = 0;  // of the header's first byte
    int64_t index = 0;    // 0-based, in the file (or in the range)
  };
  struct SkipStats {
    int64_t records_dropped = 0;
    uint64_t bytes_dropped = 0;
  };

  // Opens the file; throws Error(kNotFound/kIo) and Error(kInvalidArgument) for a byte range on
  // a compressed file or begin > end.
  explicit TFRecordReader(std::string path, TFRecordReaderOptions options = {});
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Next record: true with *record filled, false at the end. Throws Error on truncated or
  // corrupt data (under kFail) and on I/O errors.
  bool Next(Record* record);
  // Same without exceptions: ok with *at_end false (a record) or true (the end), or the error.
  Status TryNext(Record* record, bool* at_end);

  const SkipStats& skipped() const { return skipped_; }
  const std::string& path() const { return path_; }
  Compression compression() const { return compression_; }
  // Records returned so far.
  int64_t records_read() const { return records_read_; }

 private:
  // Makes at least `need` bytes from pos_ available if the stream has them; returns how many
  // are available (may be fewer only at the end of the stream).
  size_t Fill(size_t need);
  // One read call toward `need` bytes from pos_ (sliding or growing the buffer as needed).
  // REQUIRES: !eof_ and fewer than `need` bytes available.
  void ReadSome(size_t need);
  // The read buffer: one left by the previous reader on this thread with the same base size
  // (buffer_size), or a new one of `base` bytes; *capacity is its size.
  static std::unique_ptr<char[]> AcquireBuffer(size_t base, size_t* capacity);
  static void ReleaseBuffer(std::unique_ptr<char[]> data, size_t capacity, size_t base);
  uint64_t Position() const { return buffer_offset_ + pos_; }
  // Moves the read position to stream offset `target` (>= Position()).
  void SeekForward(uint64_t target);
  enum class Check {
    kValid,
    kEnd,
    kTruncatedHeader,
    kTruncatedData,
    kBadLengthCrc,
    kTooLong,
    kBadDataCrc,
  };
  struct Probe {
    Check check = Check::kEnd;
    uint64_t length = 0;     // data length, when the header was readable
    uint64_t available = 0;  // bytes from the record's start to the end of the stream, when known
  };
  // Validates the record `skip` bytes after the read position without consuming anything.
  Probe CheckRecordAt(size_t skip, bool verify);
  // First position >= from holding a valid record whose successor header also verifies (or
  // which ends the stream), or the end of the stream; moves the read position there.
  uint64_t Resync(uint64_t from);
  Status Describe(const Probe& probe) const;

  std::string path_;
  TFRecordReaderOptions options_;
  Compression compression_;
  std::unique_ptr<SequentialFile> file_;
  std::unique_ptr<MappedFile> mapping_;  // use_mmap: the whole file; buffer_ unused
  std::unique_ptr<char[]> buffer_;
  const char* data_ = nullptr;  // buffer_ or the mapping
  size_t capacity_ = 0;
  size_t pos_ = 0;              // read position in buffer_
  size_t limit_ = 0;            // end of valid bytes in buffer_
  uint64_t buffer_offset_ = 0;  // stream offset of buffer_[0]
  bool eof_ = false;
  Status pending_;  // an error from the file, raised once the buffered bytes are used up
  std::optional<uint64_t> file_size_;  // uncompressed files only
  int64_t next_index_ = 0;             // index of the next record in the file (or range)
  int64_t records_read_ = 0;           // records returned
  bool need_sync_ = false;             // a range starting after 0: find the first boundary first
  bool finished_ = false;
  SkipStats skipped_;
};

}  // namespace shardflow::io
