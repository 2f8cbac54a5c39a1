#include "io/pipeline/sources/tfrecord_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/logging.hpp"
#include "io/crc32c.hpp"
#include "io/example.hpp"
#include "io/tfrecord_format.hpp"

namespace shardflow::pipeline {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Logs each dropped region under on_corrupt = skip.
class LogReporter : public io::CorruptionReporter {
 public:
  void Corruption(uint64_t bytes, const Status& reason) override {
    SF_LOG(Warn) << "skipped " << bytes << " damaged bytes: " << reason.ToString();
  }
};

LogReporter& Reporter() {
  static LogReporter reporter;
  return reporter;
}

// data.check_finite: the float features a record's values must be finite in.
struct FiniteCheck {
  std::vector<std::string> features;  // empty: no check
  bool skip = false;                  // on_corrupt = skip
  std::shared_ptr<std::atomic<int64_t>> skipped;
};

// OK, or Error(kDataLoss) naming the feature and where, when a float feature of `data` holds
// a NaN or Inf. A malformed Example is left to the decoder, which names what is wrong with it.
Status CheckFinite(std::string_view data, const std::vector<std::string>& features,
                   const io::RecordLocation& where) {
  thread_local io::ExampleView view;
  thread_local std::vector<float> values;
  if (!io::ParseExample(data, &view, &where).ok()) return Status::Ok();
  for (const std::string& name : features) {
    const io::FeatureView* f = view.Find(name);
    if (f == nullptr || f->kind != io::FeatureKind::kFloat) continue;
    values.resize(static_cast<size_t>(f->num_values));
    f->CopyFloats(values.data());
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isfinite(values[i])) continue;
      return Status(
          ErrorCode::kDataLoss,
          "non-finite value (" + std::to_string(values[i]) + ") at index " + std::to_string(i) +
              " of float feature '" + name + "'",
          {.file = std::string(where.file),
           .offset = where.data_offset,
           .record = where.record >= 0 ? std::optional<int64_t>(where.record) : std::nullopt,
           .key = name,
           .hint = "data.on_corrupt = skip drops such records (counted); "
                   "data.check_finite = false lets them through"});
    }
  }
  return Status::Ok();
}

class TFRecordSourceReader : public RecordReader {
 public:
  TFRecordSourceReader(std::string path, io::TFRecordReaderOptions options, const ByteRange& range,
                       FiniteCheck finite, uint64_t planned_bytes)
      : path_(std::move(path)),
        options_(options),
        range_(range),
        finite_(std::move(finite)),
        planned_bytes_(planned_bytes) {
    if (!range.whole_file()) {
      options_.begin = range.begin;
      options_.end = range.end;
    }
    reader_ = std::make_unique<io::TFRecordReader>(path_, options_);
    next_offset_ = range.begin;
  }

  bool Next(Element* out) override {
    io::TFRecordReader::Record r;
    for (;;) {
      if (!reader_->Next(&r)) {
        CheckNotShrunk();
        return false;
      }
      if (Acceptable(r)) break;
    }
    Tensor t(DType::kUInt8, {static_cast<int64_t>(r.data.size())});
    if (!r.data.empty()) std::memcpy(t.raw_data(), r.data.data(), r.data.size());
    out->features.clear();
    out->features.emplace_back("record", std::move(t));
    out->where.offset = r.offset;
    // Indices count from the reader's start: exact in the file only when it began at 0.
    out->where.record = options_.begin == 0 ? r.index + index_base_ : -1;
    next_offset_ = r.offset + 16 + r.data.size();
    ++read_;
    return true;
  }

  ReaderPosition Position() const override { return {next_offset_, read_}; }

  // At the end of the part to read: a file now shorter than when the source was opened (the
  // record counts were taken then) was truncated or replaced during the run. Said as such,
  // naming the file, instead of a pipeline that just ends early.
  void CheckNotShrunk() const {
    const uint64_t end =
        range_.whole_file() ? planned_bytes_ : std::min(range_.end, planned_bytes_);
    if (reader_->compression() != io::Compression::kNone || next_offset_ >= end) return;
    std::error_code ec;
    const uint64_t now = std::filesystem::file_size(path_, ec);
    if (ec || now >= planned_bytes_) return;
    throw Error(ErrorCode::kDataLoss,
                "the file is " + std::to_string(now) + " bytes, " + std::to_string(planned_bytes_) +
                    " when the run started: it was truncated or replaced during the run",
                {.file = path_,
                 .offset = next_offset_,
                 .hint = "restore the file; --resume continues from the last checkpoint"});
  }

  // Whether `r` passes the finite check; a skipped record still counts as read (Position).
  bool Acceptable(const io::TFRecordReader::Record& r) {
    if (finite_.features.empty()) return true;
    const int64_t index = options_.begin == 0 ? r.index + index_base_ : -1;
    Status st = CheckFinite(r.data, finite_.features,
                            {.file = path_, .data_offset = r.offset + 12, .record = index});
    if (st.ok()) return true;
    if (!finite_.skip) throw Error(std::move(st));
    const int64_t n = finite_.skipped->fetch_add(1) + 1;
    if (n <= 10) SF_LOG(Warn) << "skipped record: " << st.ToString();
    next_offset_ = r.offset + 16 + r.data.size();
    ++read_;
    return false;
  }

  void Seek(const ReaderPosition& p) override {
    io::TFRecordReaderOptions o = options_;
    if (reader_->compression() == io::Compression::kNone) {
      // Reopen at the next record's boundary (exact: the offset is a record start).
      o.begin = p.offset;
      if (range_.whole_file()) o.end = UINT64_MAX;
      reader_ = std::make_unique<io::TFRecordReader>(path_, o);
      index_base_ = options_.begin == 0 ? p.record : 0;
    } else {
      reader_ = std::make_unique<io::TFRecordReader>(path_, o);
      io::TFRecordReader::Record r;
      for (int64_t i = 0; i < p.record; ++i) {
        if (!reader_->Next(&r)) break;
      }
    }
    next_offset_ = p.offset;
    read_ = p.record;
  }

 private:
  std::string path_;
  io::TFRecordReaderOptions options_;
  ByteRange range_;
  std::unique_ptr<io::TFRecordReader> reader_;
  uint64_t next_offset_ = 0;
  int64_t read_ = 0;
  int64_t index_base_ = 0;  // added to the reader's indices after a Seek in a whole file
  FiniteCheck finite_;
  uint64_t planned_bytes_;  // the file's size when the source was opened
};

// Counting drops nothing silently: a damaged region under on_corrupt = skip is counted by the
// reader that skips it (below), and logged by the pipeline when it reads it.
class QuietReporter : public io::CorruptionReporter {
 public:
  void Corruption(uint64_t, const Status&) override {}
};

// Offsets of the records the reader yields from `info`, read with `o` (checksums verified):
// what the pipeline reads under on_corrupt = skip, or a compressed file's records.
std::vector<uint64_t> ReadOffsets(const FileInfo& info, io::TFRecordReaderOptions o) {
  static QuietReporter quiet;
  o.reporter = &quiet;
  io::TFRecordReader reader(info.name, o);
  std::vector<uint64_t> offsets;
  io::TFRecordReader::Record r;
  while (reader.Next(&r)) offsets.push_back(r.offset);
  return offsets;
}

// Offsets of the records of an uncompressed file from its headers alone (length and length CRC
// checked; data CRCs are the reader's). Damage is named as the reader and shardflow-inspect
// verify name it, at the same record: under on_corrupt = fail it throws Error(kDataLoss);
// under skip the file is counted by reading it as the pipeline will (ReadOffsets).
std::vector<uint64_t> ScanHeaders(const FileInfo& info, io::OnCorrupt on_corrupt) {
  const int fd = ::open(info.name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                std::string("cannot open input file: ") + std::strerror(err), {.file = info.name});
  }
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  std::string damage;
  while (at < info.size_bytes && damage.empty()) {
    char header[12];
    ssize_t n = 0;
    do {
      n = ::pread(fd, header, sizeof(header), static_cast<off_t>(at));
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(ErrorCode::kIo, std::string("cannot read input file: ") + std::strerror(err),
                  {.file = info.name, .offset = at});
    }
    const uint64_t length = io::tfrecord::DecodeFixed64(header);
    if (n != static_cast<ssize_t>(sizeof(header))) {
      damage = "truncated record header: the file ends " + std::to_string(n) +
               " bytes into the 12-byte header";
    } else if (io::crc32c::Unmask(io::tfrecord::DecodeFixed32(header + 8)) !=
               io::crc32c::Value(header, 8)) {
      damage = "corrupted record: bad length CRC";
    } else if (length > (uint64_t{1} << 31)) {
      damage = "corrupted record: length " + std::to_string(length) +
               " exceeds max_record_bytes (" + std::to_string(uint64_t{1} << 31) + ")";
    } else if (at + 12 + length + 4 > info.size_bytes) {
      damage = "truncated record: header announces " + std::to_string(length) +
               " data bytes, the file ends " + std::to_string(info.size_bytes - at - 12) +
               " bytes after the header";
    } else {
      offsets.push_back(at);
      at += 12 + length + 4;
    }
  }
  ::close(fd);
  if (damage.empty()) return offsets;
  if (on_corrupt == io::OnCorrupt::kSkip) {
    return ReadOffsets(info,
                       {.compression = io::Compression::kNone, .on_corrupt = io::OnCorrupt::kSkip});
  }
  throw Error(ErrorCode::kDataLoss, damage,
              {.file = info.name,
               .offset = at,
               .record = static_cast<int64_t>(offsets.size()),
               .hint = "on_corrupt=skip drops damaged records and goes on"});
}

}  // namespace

io::Compression TFRecordSource::CompressionFor(const std::string& path, io::Compression option) {
  if (option != io::Compression::kAuto) return option;
  if (EndsWith(path, ".gz")) return io::Compression::kGzip;
  if (EndsWith(path, ".zlib")) return io::Compression::kZlib;
  return io::Compression::kNone;
}

TFRecordSource::TFRecordSource(std::vector<std::string> files, TFRecordSourceOptions options)
    : options_(options) {
  for (const auto& f : files) {
    files_.push_back(StatFile(f));
    if (CompressionFor(f, options.compression) != io::Compression::kNone) {
      all_uncompressed_ = false;
    }
  }
}

std::unique_ptr<RecordReader> TFRecordSource::Open(size_t file_index,
                                                   const ByteRange& range) const {
  if (file_index >= files_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  io::TFRecordReaderOptions o;
  o.compression = options_.compression;
  o.on_corrupt = options_.on_corrupt;
  o.buffer_size = options_.buffer_size;
  // One record by its offset (a list of records, dynamic sharding): read a page, not a whole
  // read_size, per record; a longer record is read to its end.
  if (range.end - range.begin <= 1) o.read_size = 4096;
  o.reporter = &Reporter();
  FiniteCheck finite{.features = options_.finite_features,
                     .skip = options_.on_corrupt == io::OnCorrupt::kSkip,
                     .skipped = nonfinite_skipped_};
  return std::make_unique<TFRecordSourceReader>(files_[file_index].name, o, range,
                                                std::move(finite), files_[file_index].size_bytes);
}

std::string TFRecordSource::FormatDescription() const {
  return std::string("tfrecord(compression=") + io::CompressionName(options_.compression) +
         ",on_corrupt=" + (options_.on_corrupt == io::OnCorrupt::kSkip ? "skip" : "fail") + ")";
}

std::vector<uint64_t> TFRecordSource::RecordOffsets(size_t file_index) const {
  const FileInfo& info = files_.at(file_index);
  const std::string key =
      info.name + "|" + std::to_string(info.size_bytes) + "|" + std::to_string(info.mtime_ns);
  {
    MutexLock lock(mu_);
    auto it = offsets_cache_.find(key);
    if (it != offsets_cache_.end()) return *it->second;
  }
  std::vector<uint64_t> offsets;
  if (CompressionFor(info.name, options_.compression) == io::Compression::kNone) {
    offsets = ScanHeaders(info, options_.on_corrupt);
  } else {
    // Under skip the checksums say which records the pipeline will drop.
    offsets = ReadOffsets(info, {.compression = options_.compression,
                                 .on_corrupt = options_.on_corrupt,
                                 .verify_checksums = options_.on_corrupt == io::OnCorrupt::kSkip});
  }
  auto shared = std::make_shared<const std::vector<uint64_t>>(std::move(offsets));
  MutexLock lock(mu_);
  offsets_cache_[key] = shared;
  return *shared;
}

}  // namespace shardflow::pipeline
