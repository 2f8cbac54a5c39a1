// CsvRecordStream: the records of one CSV file (plain, GZIP or ZLIB) whose first byte lies in a
// byte range, read through a bounded read-ahead buffer — the streaming counterpart of
// io/csv.hpp (which reads a file whole).
//
//   CsvRecordStream in("t.csv", {.begin = 0}, CsvDialect{});
//   CsvRecord r;
//   while (in.Next(&r)) use(r.fields);  // views valid until the next Next()
//
// Syntax (RFC 4180 plus the usual extensions): fields separated by `delimiter`, records ended by
// LF or CRLF (a last record without a line end is a record). A field may be enclosed in
// double quotes and then holds delimiters, line breaks (when `quoted_newlines`) and quotes
// written twice (""). A quote inside an unquoted field, text after a closing quote, and a
// quoted field left open at the end of the file are errors. Blank lines (nothing before the
// line end) are skipped, and so are lines whose first byte is `comment` (when set) — whole lines
// only, never the tail of a record. A UTF-8 byte order mark at offset 0 is ignored.
//
// Byte ranges (plain files only; compressed files support the whole-file range): a record
// belongs to the range holding its first byte; a line start is a byte after an LF that lies
// outside quotes (or offset 0). A stream over [begin, end) starts at the first line start
// >= max(begin, data_start) and yields records while their first byte is < end; the last one
// may run past `end`. Two rules to find that first line start:
//  - quoted_newlines = true (default, always correct): the stream scans the file from byte 0
//    to `begin` with a small quote/comment state machine (no field parsing; ~memory speed)
//    to learn whether `begin` lies inside a quoted field. Cost: the prefix is read once per
//    stream (from the nearest line start a CsvLineStarts cache knows, when the source shares
//    one); line numbers stay exact.
//  - quoted_newlines = false (fast): every LF ends a line, so the stream seeks to begin-1
//    and skips through the next LF (as text_line_source does); a line break inside a quoted
//    field is then a data error naming the file, line and column, so a file that breaks the
//    assumption fails instead of being split wrongly. Mid-file line numbers are unknown (-1):
//    errors name the byte offset.
// Every byte of the file is in exactly one range's records (or is a blank/comment line), so
// ranges [0,a), [a,b), ... [z,size) read every record exactly once.
// Memory: the read-ahead buffer (`read_ahead_bytes`), grown only to hold a record longer than
// it. Errors: kNotFound for a missing file, kIo for read failures, kDataLoss for a damaged
// compressed stream or an unterminated quote, kInvalidArgument for malformed records; each
// names the file and the line (1-based) or byte offset, and the column (1-based).
// Thread-safety: one stream per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_annotations.hpp"
#include "io/compression.hpp"
#include "io/file.hpp"
#include "io/read_window.hpp"

namespace shardflow::io {

struct CsvDialect {
  char delimiter = ',';
  char comment = '\0';  // '\0': no comment lines
  // Quoted fields may hold line breaks (exact byte-range resync by a prefix scan); false: they
  // are errors and byte ranges resync at the next LF.
  bool quoted_newlines = true;
  Compression compression = Compression::kAuto;  // kAuto: by suffix (.gz, .zlib)
  size_t read_ahead_bytes = size_t{1} << 18;     // grows only for longer records
};

struct CsvRecord {
  std::vector<std::string_view> fields;  // unquoted and unescaped; valid until the next Next()
  uint64_t offset = 0;                   // byte offset of the record's first byte
  int64_t line = 0;                      // 1-based physical line of that byte, -1 unknown
};

struct CsvStreamRange {
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;
  // First byte a record may start at (after the header record), with its line; 0 / 1 for a
  // file without a header. REQUIRES: a line start.
  uint64_t data_start = 0;
  int64_t data_start_line = 1;
};

// Line starts (offsets outside quotes where a line begins, with their 1-based line) that the
// resync scans of one file found, shared by the streams of a source so that a later scan starts
// at the nearest known line start at or before its offset instead of at the data start (a
// resumed or per-record reader, byte ranges read again in later epochs). A scan records one
// line start per kCheckpointBytes it crosses and the one it stops at.
// Thread-safety: safe from several threads (a mutex).
class CsvLineStarts {
 public:
  static constexpr uint64_t kCheckpointBytes = uint64_t{1} << 20;
  // The greatest known line start <= offset, or false when none is.
  bool Before(uint64_t offset, uint64_t* start, int64_t* line) const;
  void Add(uint64_t start, int64_t line);

 private:
  mutable Mutex mu_;
  std::map<uint64_t, int64_t> starts_ GUARDED_BY(mu_);
};

// Where a stream is: the offset of the next line start and its line (-1 unknown).
struct CsvStreamPosition {
  uint64_t offset = 0;
  int64_t line = 0;
};

class CsvRecordStream : private ReadWindow {
 public:
  // Opens `path` and positions it at the first record of `range`. Throws kInvalidArgument for
  // a byte range on a compressed file.
  // `line_starts` (may be null) caches the resync scans of this file (quoted_newlines only);
  // REQUIRES: it outlives the stream and belongs to the same file and dialect.
  CsvRecordStream(std::string path, const CsvStreamRange& range, const CsvDialect& dialect,
                  CsvLineStarts* line_starts = nullptr);

  // The next record of the range; false at its end.
  bool Next(CsvRecord* record);

  CsvStreamPosition Position() const { return {next_offset_, line_}; }
  // REQUIRES: `p` came from Position() of a stream over the same file, range and dialect.
  void Seek(const CsvStreamPosition& p);
  const std::string& path() const { return path_; }

  // Error text for field `column` (0-based) of `record`: "file:LINE:COLUMN" (or "file at byte
  // offset N, column C" when the line is unknown).
  std::string Where(const CsvRecord& record, size_t column) const;

 private:
  void OpenAt(uint64_t offset) { ReadWindow::OpenAt(offset, dialect_.read_ahead_bytes); }
  // Parses one record starting at buf_[pos_]; false when the buffer ends first (and not at
  // end of file). On success sets *consumed and fills record->fields (escapes pending).
  bool ParseRecord(CsvRecord* record, size_t* consumed, int64_t* newlines);
  // The quoted field opening at buf_[open]: *close = index of its closing quote, *escaped when
  // it holds a "". False when the buffer ends first (and not at end of file).
  bool ScanQuoted(size_t open, size_t column, int64_t* newlines, size_t* close, bool* escaped);
  int64_t LineAt(int64_t newlines) const;  // line of the record's start plus newlines; -1 unknown
  void Unescape(CsvRecord* record);
  void SkipToFirstLineStart(uint64_t begin);
  [[noreturn]] void Fail(ErrorCode code, const std::string& what, uint64_t offset, int64_t line,
                         size_t column) const;

  CsvStreamRange range_;
  CsvDialect dialect_;
  CsvLineStarts* line_starts_ = nullptr;
  int64_t line_ = 1;              // line of buf_[pos_], -1 unknown
  std::vector<uint8_t> escaped_;  // per field of the current record: holds a ""
};

// The header of `path`: the fields of its first record that is not blank or a comment, after
// `skip_records` records (metadata lines), and where the data after it starts (offset, line).
// A file without records gives no fields and data_start at its end. Without `has_header`: no
// fields, and the data starts after the skipped records (else at 0, after a byte order mark).
struct CsvHeader {
  std::vector<std::string> fields;
  uint64_t data_start = 0;
  int64_t data_start_line = 1;
};
CsvHeader ReadCsvHeader(const std::string& path, const CsvDialect& dialect, bool has_header,
                        int64_t skip_records = 0);

}  // namespace shardflow::io
