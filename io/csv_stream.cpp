#include "io/csv_stream.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace shardflow::io {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

}  // namespace

bool CsvLineStarts::Before(uint64_t offset, uint64_t* start, int64_t* line) const {
  MutexLock lock(mu_);
  auto it = starts_.upper_bound(offset);
  if (it == starts_.begin()) return false;
  --it;
  *start = it->first;
  *line = it->second;
  return true;
}

void CsvLineStarts::Add(uint64_t start, int64_t line) {
  MutexLock lock(mu_);
  starts_.emplace(start, line);
}

CsvRecordStream::CsvRecordStream(std::string path, const CsvStreamRange& range,
                                 const CsvDialect& dialect, CsvLineStarts* line_starts)
    : ReadWindow(path, ResolveCompression(dialect.compression, path)),
      range_(range),
      dialect_(dialect),
      line_starts_(line_starts) {
  dialect_.read_ahead_bytes = std::max<size_t>(dialect_.read_ahead_bytes, 4096);
  if (compression_ != Compression::kNone && range.begin > 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "a compressed CSV file cannot be read from a byte offset",
                {.file = path_, .offset = range.begin, .hint = "use shard_policy file or record"});
  }
  if (range.begin <= range.data_start) {
    OpenAt(range.data_start);
    line_ = range.data_start_line;
    if (range.data_start == 0 && (pos_ < fill_ || Fill()) && fill_ >= kBom.size() &&
        std::string_view(buf_.data(), kBom.size()) == kBom) {
      pos_ += kBom.size();
      next_offset_ += kBom.size();
    }
    return;
  }
  SkipToFirstLineStart(range.begin);
}

// The resync scan. State at each byte: inside a quoted field, inside a comment line, or in a
// record; `at_start` marks a line start (offset 0 of the data, or after an LF outside quotes),
// where a record, a blank line or a comment line begins. A "" inside quotes flips the quote
// state twice, so parity suffices. The first line start at or after `begin` is where the
// stream starts; the bytes before it belong to earlier ranges.
void CsvRecordStream::SkipToFirstLineStart(uint64_t begin) {
  if (!dialect_.quoted_newlines) {
    // Byte begin-1 is an LF exactly when a line starts at `begin`.
    OpenAt(begin - 1);
    line_ = -1;
    for (;;) {
      if (pos_ >= fill_ && !Fill()) return;
      const void* nl = std::memchr(buf_.data() + pos_, '\n', fill_ - pos_);
      if (nl != nullptr) {
        const size_t n = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1;
        next_offset_ += n - pos_;
        pos_ = n;
        return;
      }
      next_offset_ += fill_ - pos_;
      pos_ = fill_;
    }
  }
  uint64_t from = range_.data_start;
  int64_t from_line = range_.data_start_line;
  uint64_t known = 0;
  int64_t known_line = 0;
  if (line_starts_ != nullptr && line_starts_->Before(begin, &known, &known_line) && known > from) {
    from = known, from_line = known_line;
  }
  OpenAt(from);
  line_ = from_line;
  uint64_t next_checkpoint = from + CsvLineStarts::kCheckpointBytes;
  bool quoted = false, comment = false, at_start = true;
  for (;;) {
    if (pos_ >= fill_ && !Fill()) return;
    const char* p = buf_.data();
    size_t i = pos_;
    for (; i < fill_; ++i) {
      if (at_start) {
        const uint64_t here = next_offset_ + (i - pos_);
        if (here >= begin) break;
        if (here >= next_checkpoint && line_starts_ != nullptr) {
          line_starts_->Add(here, line_);
          next_checkpoint = here + CsvLineStarts::kCheckpointBytes;
        }
      }
      const char c = p[i];
      if (quoted) {
        if (c == '"') quoted = false;
        line_ += c == '\n';
      } else if (comment) {
        if (c == '\n') comment = false, at_start = true, ++line_;
      } else if (c == '\n') {
        at_start = true;
        ++line_;
      } else {
        if (at_start && dialect_.comment != '\0' && c == dialect_.comment) comment = true;
        if (c == '"') quoted = true;
        at_start = false;
      }
    }
    next_offset_ += i - pos_;
    pos_ = i;
    if (i < fill_) {
      if (line_starts_ != nullptr) line_starts_->Add(next_offset_, line_);
      return;
    }
  }
}

void CsvRecordStream::Fail(ErrorCode code, const std::string& what, uint64_t offset, int64_t line,
                           size_t column) const {
  std::string where = path_;
  if (line >= 0) {
    where += ":" + std::to_string(line) + ":" + std::to_string(column + 1);
  } else {
    where += " at byte offset " + std::to_string(offset) + ", column " + std::to_string(column + 1);
  }
  throw Error(code, where + ": " + what, {.file = path_, .offset = offset});
}

std::string CsvRecordStream::Where(const CsvRecord& record, size_t column) const {
  if (record.line >= 0) {
    return path_ + ":" + std::to_string(record.line) + ":" + std::to_string(column + 1);
  }
  return path_ + " at byte offset " + std::to_string(record.offset) + ", column " +
         std::to_string(column + 1);
}

int64_t CsvRecordStream::LineAt(int64_t newlines) const {
  return line_ < 0 ? int64_t{-1} : line_ + newlines;
}

// The quoted field opening at buf_[open]: memchr to each quote; a "" continues the field.
bool CsvRecordStream::ScanQuoted(size_t open, size_t column, int64_t* newlines, size_t* close,
                                 bool* escaped) {
  const char* p = buf_.data();
  const uint64_t at = next_offset_ + (open - pos_);
  *escaped = false;
  for (size_t j = open + 1;;) {
    const void* q = std::memchr(p + j, '"', fill_ - j);
    const size_t end = q ? static_cast<size_t>(static_cast<const char*>(q) - p) : fill_;
    const int64_t breaks = std::count(p + j, p + end, '\n');
    if (breaks > 0 && !dialect_.quoted_newlines) {
      Fail(ErrorCode::kInvalidArgument,
           "line break inside a quoted field (csv_quoted_newlines = false)", at, LineAt(*newlines),
           column);
    }
    if (q == nullptr) {
      if (!eof_) return false;
      Fail(ErrorCode::kDataLoss, "quoted field left open at the end of the file", at,
           LineAt(*newlines), column);
    }
    *newlines += breaks;
    if (end + 1 >= fill_ && !eof_) return false;  // is the next byte a quote?
    if (end + 1 < fill_ && p[end + 1] == '"') {
      *escaped = true;
      j = end + 2;
      continue;
    }
    *close = end;
    return true;
  }
}

// One pass over the record's bytes: an unquoted field runs to a delimiter, CR or LF; a quoted
// field to its closing quote (ScanQuoted). Escapes are undone afterwards (Unescape) so that a
// record cut by the end of the buffer can be parsed again from its unchanged bytes once more
// are read.
bool CsvRecordStream::ParseRecord(CsvRecord* record, size_t* consumed, int64_t* newlines) {
  const char* p = buf_.data();
  const char delim = dialect_.delimiter;
  auto at = [&](size_t i) { return next_offset_ + (i - pos_); };
  record->fields.clear();
  escaped_.clear();
  *newlines = 0;
  size_t i = pos_;
  for (;;) {
    const size_t column = record->fields.size();
    if (i < fill_ && p[i] == '"') {
      size_t close = 0;
      bool escaped = false;
      if (!ScanQuoted(i, column, newlines, &close, &escaped)) return false;
      record->fields.emplace_back(p + i + 1, close - i - 1);
      escaped_.push_back(escaped ? 1 : 0);
      i = close + 1;
      if (i < fill_ && p[i] != delim && p[i] != '\n' && p[i] != '\r') {
        Fail(ErrorCode::kInvalidArgument,
             std::string("unexpected '") + p[i] + "' after a closing quote", at(i),
             LineAt(*newlines), column);
      }
    } else {
      size_t j = i;
      while (j < fill_) {
        const char c = p[j];
        if (c == delim || c == '\n' || c == '\r') break;
        if (c == '"') {
          Fail(ErrorCode::kInvalidArgument, "quote inside an unquoted field", at(j),
               LineAt(*newlines), column);
        }
        ++j;
      }
      if (j >= fill_ && !eof_) return false;
      record->fields.emplace_back(p + i, j - i);
      escaped_.push_back(0);
      i = j;
    }
    if (i >= fill_) break;  // end of file ends the record
    if (p[i] == delim) {
      ++i;
      if (i >= fill_ && eof_) {  // "a,b," at the very end: a last empty field
        record->fields.emplace_back();
        escaped_.push_back(0);
        break;
      }
      continue;
    }
    if (p[i] == '\r') {
      if (i + 1 >= fill_ && !eof_) return false;
      if (i + 1 < fill_ && p[i + 1] != '\n') {
        Fail(ErrorCode::kInvalidArgument, "a carriage return not followed by a line feed", at(i),
             LineAt(*newlines), column);
      }
      ++i;
      if (i >= fill_) break;
    }
    ++i;  // the LF
    ++*newlines;
    break;
  }
  *consumed = i - pos_;
  return true;
}

void CsvRecordStream::Unescape(CsvRecord* record) {
  for (size_t f = 0; f < record->fields.size(); ++f) {
    if (!escaped_[f]) continue;
    std::string_view v = record->fields[f];
    char* out = buf_.data() + (v.data() - buf_.data());
    size_t n = 0;
    for (size_t k = 0; k < v.size(); ++k) {
      out[n++] = v[k];
      if (v[k] == '"') ++k;  // "" -> "
    }
    record->fields[f] = std::string_view(out, n);
  }
}

bool CsvRecordStream::Next(CsvRecord* record) {
  for (;;) {
    if (next_offset_ >= range_.end) return false;
    if (pos_ >= fill_ && !Fill()) return false;
    // A blank line (LF, CRLF, or a CR ending the file) or a comment line holds no record.
    const char c = buf_[pos_];
    if (c == '\r' && pos_ + 1 >= fill_ && !eof_) {
      Fill();
      continue;
    }
    const bool blank = c == '\n' || (c == '\r' && (pos_ + 1 >= fill_ || buf_[pos_ + 1] == '\n'));
    if (blank || (dialect_.comment != '\0' && c == dialect_.comment)) {
      const void* nl = std::memchr(buf_.data() + pos_, '\n', fill_ - pos_);
      if (nl == nullptr && !eof_) {
        Fill();
        continue;
      }
      const size_t n =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1 : fill_;
      next_offset_ += n - pos_;
      pos_ = n;
      if (line_ >= 0 && nl != nullptr) ++line_;
      continue;
    }
    size_t consumed = 0;
    int64_t newlines = 0;
    while (!ParseRecord(record, &consumed, &newlines)) Fill();
    Unescape(record);
    record->offset = next_offset_;
    record->line = line_;
    pos_ += consumed;
    next_offset_ += consumed;
    if (line_ >= 0) line_ += newlines;
    return true;
  }
}

void CsvRecordStream::Seek(const CsvStreamPosition& p) {
  OpenAt(p.offset);
  line_ = p.line;
}

CsvHeader ReadCsvHeader(const std::string& path, const CsvDialect& dialect, bool has_header,
                        int64_t skip_records) {
  CsvDialect small = dialect;
  small.read_ahead_bytes = 1 << 14;
  CsvRecordStream in(path, CsvStreamRange{}, small);
  CsvHeader header;
  CsvRecord record;
  for (int64_t i = 0; i < skip_records && in.Next(&record); ++i) {
  }
  if (has_header && in.Next(&record)) {
    header.fields.assign(record.fields.begin(), record.fields.end());
  }
  const CsvStreamPosition p = in.Position();
  header.data_start = p.offset;
  header.data_start_line = p.line;
  return header;
}

}  // namespace shardflow::io
