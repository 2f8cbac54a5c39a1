// zlib-backed compressed streams for TFRecord files.
#include "io/compression.hpp"

#include <algorithm>
#include <cstring>

#include "core/check_zlib.hpp"

namespace shardflow::io {
namespace {

const char* StreamName(Compression c) { return c == Compression::kGzip ? "GZIP" : "ZLIB"; }
int WindowBits(Compression c) { return c == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kAuto:
      return "auto";
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZlib:
      return "zlib";
  }
  return "?";
}

Compression ParseCompression(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower.empty() || lower == "none") return Compression::kNone;
  if (lower == "gzip") return Compression::kGzip;
  if (lower == "zlib") return Compression::kZlib;
  if (lower == "auto") return Compression::kAuto;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown compression '" + name + "' (expected none, gzip, zlib or auto)");
}

Compression ResolveCompression(Compression c, const std::string& path) {
  if (c != Compression::kAuto) return c;
  if (EndsWith(path, ".gz")) return Compression::kGzip;
  if (EndsWith(path, ".zlib")) return Compression::kZlib;
  return Compression::kNone;
}

// ---------------------------------------------------------------------------------------------

InflatingFile::InflatingFile(std::unique_ptr<SequentialFile> base, Compression kind,
                             size_t input_buffer_size)
    : base_(std::move(base)), kind_(kind), input_(std::max<size_t>(input_buffer_size, 4096)) {
  if (kind != Compression::kGzip && kind != Compression::kZlib) {
    throw Error(ErrorCode::kInternal, "InflatingFile needs gzip or zlib", {.file = base_->name()});
  }
  SF_CHECK_ZLIB(inflateInit2(&stream_, WindowBits(kind)), &stream_);
}

InflatingFile::~InflatingFile() { inflateEnd(&stream_); }

Status InflatingFile::Refill() {
  size_t got = 0;
  Status s = base_->Read(input_.size(), reinterpret_cast<char*>(input_.data()), &got);
  if (!s.ok()) return s;
  stream_.next_in = input_.data();
  stream_.avail_in = static_cast<uInt>(got);
  compressed_offset_ += got;
  if (got == 0) input_eof_ = true;
  return Status::Ok();
}

Status InflatingFile::Read(size_t n, char* scratch, size_t* bytes_read) {
  *bytes_read = 0;
  if (!pending_.ok()) return pending_;
  size_t produced = 0;
  // Hands out what was inflated before an error and keeps the error for the next call, so the
  // records in front of damage are still delivered.
  auto fail = [&](Status s) {
    if (produced == 0) return s;
    pending_ = std::move(s);
    *bytes_read = produced;
    return Status::Ok();
  };
  while (produced < n && !done_) {
    if (stream_end_) {
      // Another GZIP member may follow; a ZLIB stream must end here.
      if (stream_.avail_in == 0 && !input_eof_) {
        Status s = Refill();
        if (!s.ok()) return fail(std::move(s));
      }
      if (stream_.avail_in == 0) {
        done_ = true;
        break;
      }
      if (kind_ == Compression::kZlib) {
        return fail(Status(ErrorCode::kDataLoss,
                           "unexpected bytes after the end of the ZLIB stream",
                           {.file = name(), .offset = compressed_offset_ - stream_.avail_in}));
      }
      SF_CHECK_ZLIB(inflateReset(&stream_), &stream_);
      stream_end_ = false;
    }
    if (stream_.avail_in == 0 && !input_eof_) {
      Status s = Refill();
      if (!s.ok()) return fail(std::move(s));
    }
    if (stream_.avail_in == 0 && input_eof_) {
      return fail(Status(ErrorCode::kDataLoss, std::string(StreamName(kind_)) + " stream cut short",
                         {.file = name(),
                          .offset = compressed_offset_,
                          .hint = "the compressed file is truncated"}));
    }
    const size_t chunk = std::min<size_t>(n - produced, 1u << 30);
    stream_.next_out = reinterpret_cast<Bytef*>(scratch + produced);
    stream_.avail_out = static_cast<uInt>(chunk);
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    produced += chunk - stream_.avail_out;
    if (rc == Z_STREAM_END) {
      stream_end_ = true;
    } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      return fail(Status(ErrorCode::kDataLoss,
                         std::string("corrupt ") + StreamName(kind_) +
                             " stream: " + (stream_.msg ? stream_.msg : "invalid data"),
                         {.file = name(), .offset = compressed_offset_ - stream_.avail_in}));
    } else {
      SF_CHECK_ZLIB(rc, &stream_);
    }
  }
  *bytes_read = produced;
  return Status::Ok();
}

Status InflatingFile::Skip(uint64_t n) {
  char sink[16384];
  while (n > 0) {
    size_t got = 0;
    Status s = Read(static_cast<size_t>(std::min<uint64_t>(n, sizeof(sink))), sink, &got);
    if (!s.ok()) return s;
    if (got == 0) break;
    n -= got;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

DeflatingFile::DeflatingFile(std::unique_ptr<WritableFile> base, Compression kind, int level)
    : base_(std::move(base)), output_(1 << 18) {
  if (kind != Compression::kGzip && kind != Compression::kZlib) {
    throw Error(ErrorCode::kInternal, "DeflatingFile needs gzip or zlib", {.file = base_->name()});
  }
  SF_CHECK_ZLIB(deflateInit2(&stream_, level, Z_DEFLATED, WindowBits(kind), 8, Z_DEFAULT_STRATEGY),
                &stream_);
}

DeflatingFile::~DeflatingFile() {
  if (!closed_) (void)Close();
  deflateEnd(&stream_);
}

Status DeflatingFile::Deflate(int flush) {
  while (true) {
    stream_.next_out = output_.data();
    stream_.avail_out = static_cast<uInt>(output_.size());
    const int rc = SF_CHECK_ZLIB(deflate(&stream_, flush), &stream_);
    const size_t have = output_.size() - stream_.avail_out;
    if (have > 0) {
      Status s =
          base_->Append(std::string_view(reinterpret_cast<const char*>(output_.data()), have));
      if (!s.ok()) return s;
    }
    if (flush == Z_FINISH ? rc == Z_STREAM_END
                          : (stream_.avail_in == 0 && stream_.avail_out != 0)) {
      return Status::Ok();
    }
  }
}

Status DeflatingFile::Append(std::string_view data) {
  if (closed_) return Status(ErrorCode::kIo, "append to a closed file", {.file = name()});
  while (!data.empty()) {
    const size_t chunk = std::min<size_t>(data.size(), 1u << 30);
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream_.avail_in = static_cast<uInt>(chunk);
    Status s = Deflate(Z_NO_FLUSH);
    if (!s.ok()) return s;
    data.remove_prefix(chunk);
  }
  return Status::Ok();
}

Status DeflatingFile::Flush() {
  if (closed_) return Status(ErrorCode::kIo, "flush of a closed file", {.file = name()});
  Status s = Deflate(Z_SYNC_FLUSH);
  if (!s.ok()) return s;
  return base_->Flush();
}

Status DeflatingFile::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  stream_.avail_in = 0;
  Status s = Deflate(Z_FINISH);
  Status c = base_->Close();
  return s.ok() ? c : s;
}

}  // namespace shardflow::io
