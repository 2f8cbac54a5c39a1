// TFRecordReader: buffered, zero-copy reading of TFRecord framing with corruption handling.
//
// The buffer holds a window [buffer_offset_, buffer_offset_ + limit_) of the (uncompressed)
// stream; pos_ is the read position inside it. Fill(n) slides the unread tail to the front and
// reads more, growing the buffer geometrically only while data actually arrives, so a header
// that announces a huge length cannot make us allocate it: for uncompressed files such a header
// is rejected against the file size first, for compressed ones the buffer grows only with
// inflated bytes.
#include "io/tfrecord_reader.hpp"

#include <algorithm>
#include <cstring>

#include "io/crc32c.hpp"
#include "io/tfrecord_format.hpp"

namespace shardflow::io {

using tfrecord::DecodeFixed32;
using tfrecord::DecodeFixed64;
using tfrecord::kFooterSize;
using tfrecord::kFramingSize;
using tfrecord::kHeaderSize;
using tfrecord::kLengthSize;

namespace {

// One released read buffer per thread, handed to the next reader opened on that thread with the
// same buffer_size: a data set is read file after file, and fresh pages for every file's buffer
// (page faults, zeroing by the kernel, and again for each growth) cost as much as checking the
// CRCs. Buffers above kMaxCachedBuffer are freed.
constexpr size_t kMaxCachedBuffer = size_t{64} << 20;
struct CachedBuffer {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;
  size_t base = 0;  // the buffer_size it was allocated for
};
thread_local CachedBuffer t_cached;

}  // namespace

std::unique_ptr<char[]> TFRecordReader::AcquireBuffer(size_t base, size_t* capacity) {
  if (t_cached.data && t_cached.base == base && t_cached.capacity >= base) {
    *capacity = t_cached.capacity;
    return std::move(t_cached.data);
  }
  *capacity = base;
  return std::make_unique_for_overwrite<char[]>(base);
}

void TFRecordReader::ReleaseBuffer(std::unique_ptr<char[]> data, size_t capacity, size_t base) {
  if (capacity > kMaxCachedBuffer) return;
  t_cached.data = std::move(data);
  t_cached.capacity = capacity;
  t_cached.base = base;
}

OnCorrupt ParseOnCorrupt(const std::string& name) {
  if (name == "fail") return OnCorrupt::kFail;
  if (name == "skip") return OnCorrupt::kSkip;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown on_corrupt policy '" + name + "' (expected fail or skip)");
}

TFRecordReader::TFRecordReader(std::string path, TFRecordReaderOptions options)
    : path_(std::move(path)),
      options_(options),
      compression_(ResolveCompression(options.compression, path_)) {
  FileSystem* fs = options_.file_system ? options_.file_system : FileSystem::Default();
  const bool ranged = options_.begin != 0 || options_.end != UINT64_MAX;
  if (options_.begin > options_.end) {
    throw Error(ErrorCode::kInvalidArgument,
                "byte range begin " + std::to_string(options_.begin) + " is after end " +
                    std::to_string(options_.end),
                {.file = path_});
  }
  if (ranged && compression_ != Compression::kNone) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("byte ranges need an uncompressed file, this one is ") +
                    CompressionName(compression_),
                {.file = path_, .hint = "shard compressed files by file, not by record"});
  }
  if (compression_ == Compression::kNone && options_.use_mmap) {
    mapping_ = fs->MapFile(path_);
    if (mapping_) {
      const std::string_view all = mapping_->data();
      data_ = all.data();
      limit_ = all.size();
      eof_ = true;
      pos_ = static_cast<size_t>(std::min<uint64_t>(options_.begin, all.size()));
      file_size_ = all.size();
      need_sync_ = options_.begin > 0;
      return;
    }
  }
  std::unique_ptr<SequentialFile> base = fs->NewSequentialFile(path_);
  if (compression_ == Compression::kNone) {
    file_size_ = fs->FileSize(path_);
    file_ = std::move(base);
  } else {
    file_ = std::make_unique<InflatingFile>(std::move(base), compression_, options_.buffer_size);
  }
  buffer_ = AcquireBuffer(std::max<size_t>(options_.buffer_size, 64), &capacity_);
  data_ = buffer_.get();
  if (options_.begin > 0) {
    ThrowIfError(file_->Skip(options_.begin));
    buffer_offset_ = options_.begin;
    need_sync_ = true;
  }
}

TFRecordReader::~TFRecordReader() {
  if (buffer_)
    ReleaseBuffer(std::move(buffer_), capacity_, std::max<size_t>(options_.buffer_size, 64));
}

size_t TFRecordReader::Fill(size_t need) {
  while (limit_ - pos_ < need && !eof_) ReadSome(need);
  return limit_ - pos_;
}

// One read of at most read_size bytes. The unread tail slides to the front when less than a
// read's worth of room is left after it (about once per buffer_size - read_size bytes
// consumed), or as soon as the `need` bytes cannot fit from pos_: a record is then moved while
// only its first piece has arrived, instead of sliding most of it later. The buffer grows only
// when it is full of unread bytes that are all needed.
void TFRecordReader::ReadSome(size_t need) {
  const size_t chunk = std::max<size_t>(options_.read_size, 64);
  if (pos_ > 0 && (capacity_ - limit_ < chunk || capacity_ - pos_ < need)) {
    const size_t avail = limit_ - pos_;
    std::memmove(buffer_.get(), buffer_.get() + pos_, avail);
    buffer_offset_ += pos_;
    limit_ = avail;
    pos_ = 0;
  }
  if (limit_ == capacity_) {
    // Grow geometrically, and only because the data is really there. For an uncompressed file
    // the length was already checked against the file size, so the data is there: grow to the
    // whole record at once (one copy, fresh pages once).
    const size_t new_capacity =
        file_size_ ? need : std::min(need, std::max(capacity_ * 2, options_.buffer_size));
    auto bigger = std::make_unique_for_overwrite<char[]>(new_capacity);
    std::memcpy(bigger.get(), buffer_.get(), limit_);
    buffer_ = std::move(bigger);
    data_ = buffer_.get();
    capacity_ = new_capacity;
  }
  // A record longer than one read is read exactly to its end, so the next record starts a fresh
  // read that can go to the front of the buffer without moving anything; shorter records are
  // read a whole read_size at a time, several per call.
  size_t n = std::min(chunk, capacity_ - limit_);
  if (need > chunk) n = std::min(n, need - (limit_ - pos_));
  size_t got = 0;
  Status s = file_->Read(n, buffer_.get() + limit_, &got);
  if (!s.ok()) {
    pending_ = std::move(s);
    eof_ = true;
    return;
  }
  if (got == 0) {
    eof_ = true;
    return;
  }
  limit_ += got;
}

void TFRecordReader::SeekForward(uint64_t target) {
  while (Position() < target) {
    const uint64_t step = target - Position();
    const size_t avail = limit_ - pos_;
    if (step <= avail) {
      pos_ += static_cast<size_t>(step);
      return;
    }
    pos_ = limit_;
    if (Fill(1) == 0) return;  // end of stream before target
  }
}

TFRecordReader::Probe TFRecordReader::CheckRecordAt(size_t skip, bool verify) {
  Probe probe;
  const uint64_t start = Position() + skip;
  size_t avail = Fill(skip + kHeaderSize);
  avail = avail > skip ? avail - skip : 0;
  probe.available = avail;
  if (avail == 0) return probe;  // kEnd
  if (avail < kHeaderSize) {
    probe.check = Check::kTruncatedHeader;
    return probe;
  }
  const char* header = data_ + pos_ + skip;
  probe.length = DecodeFixed64(header);
  if (verify &&
      crc32c::Unmask(DecodeFixed32(header + kLengthSize)) != crc32c::Value(header, kLengthSize)) {
    probe.check = Check::kBadLengthCrc;
    return probe;
  }
  if (probe.length > options_.max_record_bytes) {
    probe.check = Check::kTooLong;
    return probe;
  }
  if (file_size_) {
    const uint64_t remaining = *file_size_ > start ? *file_size_ - start : 0;
    probe.available = remaining;
    if (remaining < kFramingSize || probe.length > remaining - kFramingSize) {
      probe.check = Check::kTruncatedData;
      return probe;
    }
  }
  // Read the rest of the record one read at a time, extending the data CRC over each piece as
  // soon as it has arrived, while it is still in cache (a record larger than the cache would
  // otherwise be read in full and then fetched again from memory for the CRC). Offsets are
  // relative to pos_, which a read may move (the buffer slides or grows).
  const size_t total = kFramingSize + static_cast<size_t>(probe.length);
  const size_t data_at = skip + kHeaderSize;
  const size_t length = static_cast<size_t>(probe.length);
  uint32_t crc = 0;
  size_t crc_done = 0;
  while (true) {
    avail = limit_ - pos_;
    if (verify && avail > data_at + crc_done && crc_done < length) {
      const size_t upto = std::min(avail - data_at, length);
      crc = crc32c::Extend(crc, data_ + pos_ + data_at + crc_done, upto - crc_done);
      crc_done = upto;
    }
    if (avail >= skip + total || eof_) break;
    ReadSome(skip + total);
  }
  avail = avail > skip ? avail - skip : 0;
  if (avail < total) {
    probe.available = avail;
    probe.check = Check::kTruncatedData;
    return probe;
  }
  const char* data = data_ + pos_ + data_at;
  if (verify && crc32c::Unmask(DecodeFixed32(data + probe.length)) != crc) {
    probe.check = Check::kBadDataCrc;
    return probe;
  }
  probe.check = Check::kValid;
  return probe;
}

// Scans byte by byte. A candidate passes when its length CRC and data CRC verify and the header
// after it (if any) has a valid length CRC: data that merely contains header-like bytes, or even
// a whole embedded record, is not mistaken for a boundary unless a valid header follows it too.
uint64_t TFRecordReader::Resync(uint64_t from) {
  SeekForward(from);
  while (true) {
    const Probe probe = CheckRecordAt(0, /*verify=*/true);
    if (probe.check == Check::kEnd || probe.check == Check::kTruncatedHeader) {
      pos_ = limit_;  // nothing valid can start in fewer than 12 bytes
      return Position();
    }
    if (probe.check == Check::kValid) {
      const size_t next = kFramingSize + static_cast<size_t>(probe.length);
      const size_t avail = Fill(next + kHeaderSize);
      if (avail < next + kHeaderSize) return Position();  // the record ends the stream (or nearly)
      const char* header = data_ + pos_ + next;
      if (crc32c::Unmask(DecodeFixed32(header + kLengthSize)) ==
          crc32c::Value(header, kLengthSize)) {
        return Position();
      }
    }
    if (Fill(1) == 0) return Position();
    ++pos_;
  }
}

Status TFRecordReader::Describe(const Probe& probe) const {
  std::string message;
  switch (probe.check) {
    case Check::kTruncatedHeader:
      message = "truncated record header: the file ends " + std::to_string(probe.available) +
                " bytes into the 12-byte header";
      break;
    case Check::kTruncatedData:
      message = "truncated record: header announces " + std::to_string(probe.length) +
                " data bytes, the file ends " +
                std::to_string(probe.available > kHeaderSize ? probe.available - kHeaderSize : 0) +
                " bytes after the header";
      break;
    case Check::kBadLengthCrc:
      message = "corrupted record: bad length CRC";
      break;
    case Check::kTooLong:
      message = "corrupted record: length " + std::to_string(probe.length) +
                " exceeds max_record_bytes (" + std::to_string(options_.max_record_bytes) + ")";
      break;
    case Check::kBadDataCrc:
      message = "corrupted record: bad data CRC";
      break;
    case Check::kValid:
    case Check::kEnd:
      message = "internal: no error";
      break;
  }
  std::string hint = options_.on_corrupt == OnCorrupt::kFail
                         ? "on_corrupt=skip drops damaged records and goes on"
                         : "";
  if (compression_ != Compression::kNone) {
    hint = std::string("offset counts uncompressed bytes of the ") + CompressionName(compression_) +
           " stream" + (hint.empty() ? "" : "; " + hint);
  }
  return Status(ErrorCode::kDataLoss, std::move(message),
                {.file = path_, .offset = Position(), .record = next_index_, .hint = hint});
}

Status TFRecordReader::TryNext(Record* record, bool* at_end) {
  *at_end = false;
  if (finished_) {
    *at_end = true;
    return Status::Ok();
  }
  if (need_sync_) {
    need_sync_ = false;
    Resync(options_.begin);
  }
  while (true) {
    const uint64_t start = Position();
    const Probe probe = CheckRecordAt(0, options_.verify_checksums);
    if (probe.check == Check::kValid) {
      if (start >= options_.end) break;  // the next range's first record
      record->data =
          std::string_view(data_ + pos_ + kHeaderSize, static_cast<size_t>(probe.length));
      record->offset = start;
      record->index = next_index_++;
      ++records_read_;
      pos_ += kFramingSize + static_cast<size_t>(probe.length);
      return Status::Ok();
    }
    // The file failed under us (I/O error, damaged compressed stream): that, not the framing,
    // is the error. Its offset is the file's; the record index is the one we were reading.
    if (!pending_.ok() && (probe.check == Check::kEnd || probe.check == Check::kTruncatedHeader ||
                           probe.check == Check::kTruncatedData)) {
      Status s = pending_;
      if (!s.context().record) s.mutable_context().record = next_index_;
      return s;
    }
    if (probe.check == Check::kEnd) break;
    Status damage = Describe(probe);
    if (options_.on_corrupt == OnCorrupt::kFail) return damage;
    // Skip: find where good records resume.
    uint64_t resume = 0;
    bool resumed = false;
    if (probe.check == Check::kBadDataCrc) {
      // The length was intact: the next record should start right after this one.
      const size_t next = kFramingSize + static_cast<size_t>(probe.length);
      const Check after = CheckRecordAt(next, /*verify=*/true).check;
      if (after == Check::kValid || after == Check::kEnd) {
        SeekForward(start + next);
        resume = start + next;
        resumed = true;
      }
    }
    if (!resumed) resume = Resync(start + 1);
    ++skipped_.records_dropped;
    skipped_.bytes_dropped += resume - start;
    ++next_index_;
    if (options_.reporter != nullptr) options_.reporter->Corruption(resume - start, damage);
  }
  finished_ = true;
  *at_end = true;
  return Status::Ok();
}

bool TFRecordReader::Next(Record* record) {
  bool at_end = false;
  ThrowIfError(TryNext(record, &at_end));
  return !at_end;
}

}  // namespace shardflow::io
