#include "io/pipeline/fixed_length_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/logging.hpp"

namespace shardflow::pipeline {
namespace {

class FixedLengthReader : public RecordReader {
 public:
  FixedLengthReader(const FileInfo& info, const FixedLengthOptions& o, const ByteRange& range)
      : info_(info), record_bytes_(o.record_bytes), header_bytes_(o.header_bytes) {
    fd_ = ::open(info.name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                  std::string("cannot open input file: ") + std::strerror(err),
                  {.file = info.name});
    }
    // Records whose first byte lies in [begin, end): k >= ceil((begin - header) / size).
    auto first_at_or_after = [&](uint64_t offset) -> int64_t {
      if (offset <= header_bytes_) return 0;
      return static_cast<int64_t>((offset - header_bytes_ + record_bytes_ - 1) / record_bytes_);
    };
    const int64_t in_file = info.num_records;  // whole records only (see the constructor)
    next_ = std::min(first_at_or_after(range.begin), in_file);
    end_ = range.end == ByteRange().end ? in_file : std::min(first_at_or_after(range.end), in_file);
  }
  ~FixedLengthReader() override { ::close(fd_); }

  bool Next(Element* out) override {
    if (next_ >= end_) return false;
    const uint64_t offset = header_bytes_ + static_cast<uint64_t>(next_) * record_bytes_;
    Tensor t(DType::kUInt8, {static_cast<int64_t>(record_bytes_)});
    uint64_t got = 0;
    while (got < record_bytes_) {
      const ssize_t n = ::pread(fd_, static_cast<char*>(t.raw_data()) + got, record_bytes_ - got,
                                static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw Error(ErrorCode::kIo, std::string("read failed: ") + std::strerror(errno),
                    {.file = info_.name, .offset = offset, .record = next_});
      }
      if (n == 0) {  // the file shrank since construction
        throw Error(ErrorCode::kDataLoss,
                    "truncated record: " + std::to_string(got) + " of " +
                        std::to_string(record_bytes_) + " bytes (file was " +
                        std::to_string(info_.size_bytes) + " bytes when opened)",
                    {.file = info_.name, .offset = offset, .record = next_});
      }
      got += static_cast<uint64_t>(n);
    }
    out->features.clear();
    out->features.emplace_back("bytes", std::move(t));
    out->where.record = next_;
    out->where.offset = offset;
    ++next_;
    return true;
  }
  ReaderPosition Position() const override {
    return {header_bytes_ + static_cast<uint64_t>(next_) * record_bytes_, next_};
  }
  void Seek(const ReaderPosition& p) override { next_ = std::min(p.record, end_); }

 private:
  FileInfo info_;
  uint64_t record_bytes_, header_bytes_;
  int fd_ = -1;
  int64_t next_ = 0, end_ = 0;
};

}  // namespace

FixedLengthRecordSource::FixedLengthRecordSource(std::vector<std::string> files,
                                                 const FixedLengthOptions& options)
    : options_(options) {
  if (options.record_bytes == 0) {
    throw Error(ErrorCode::kInvalidArgument, "fixed-length records need record_bytes > 0",
                {.key = "record_bytes"});
  }
  for (const auto& f : files) {
    FileInfo info = StatFile(f);
    const uint64_t frame = options.header_bytes + options.footer_bytes;
    if (info.size_bytes < frame) {
      throw Error(ErrorCode::kDataLoss,
                  "file of " + std::to_string(info.size_bytes) + " bytes is shorter than header " +
                      std::to_string(options.header_bytes) + " + footer " +
                      std::to_string(options.footer_bytes) + " bytes",
                  {.file = f});
    }
    const uint64_t body = info.size_bytes - frame;
    const uint64_t tail = body % options.record_bytes;
    info.num_records = static_cast<int64_t>(body / options.record_bytes);
    if (tail != 0) {
      ErrorContext where{
          .file = f, .offset = options.header_bytes + body - tail, .record = info.num_records};
      const std::string what =
          "file of " + std::to_string(info.size_bytes) + " bytes: body of " + std::to_string(body) +
          " bytes (after header " + std::to_string(options.header_bytes) + ", footer " +
          std::to_string(options.footer_bytes) + ") is not a whole number of " +
          std::to_string(options.record_bytes) + "-byte records; " + std::to_string(tail) +
          " bytes left over";
      if (options.tail == OnError::kFail) {
        where.hint = "check record/header/footer sizes, or set " + options.tail_key +
                     " = skip to drop the tail";
        throw Error(ErrorCode::kDataLoss, what, where);
      }
      counters_->dropped_bytes.fetch_add(static_cast<int64_t>(tail));
      WarnOnce(std::string("dropping a partial record: ") +
               Error(ErrorCode::kDataLoss, what, where).what());
    }
    infos_.push_back(std::move(info));
  }
}

FixedLengthRecordSource::FixedLengthRecordSource(std::vector<std::string> files,
                                                 uint64_t record_bytes, uint64_t header_bytes)
    : FixedLengthRecordSource(std::move(files), FixedLengthOptions{.record_bytes = record_bytes,
                                                                   .header_bytes = header_bytes}) {}

std::unique_ptr<RecordReader> FixedLengthRecordSource::Open(size_t file_index,
                                                            const ByteRange& range) const {
  if (file_index >= infos_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<FixedLengthReader>(infos_[file_index], options_, range);
}

std::string FixedLengthRecordSource::FormatDescription() const {
  return "fixed_length(record=" + std::to_string(options_.record_bytes) +
         ",header=" + std::to_string(options_.header_bytes) +
         ",footer=" + std::to_string(options_.footer_bytes) +
         ",tail=" + OnErrorName(options_.tail) + ")";
}

std::shared_ptr<const RecordSource> OpenFixedLengthSource(const std::vector<std::string>& files,
                                                          const FixedLengthOptions& options) {
  return std::make_shared<FixedLengthRecordSource>(files, options);
}

}  // namespace shardflow::pipeline
