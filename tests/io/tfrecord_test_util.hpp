// Helpers for TFRecord tests: build framed files in memory and read them back.
#pragma once

#include <string>
#include <vector>

#include "io/file.hpp"
#include "io/tfrecord_reader.hpp"
#include "io/tfrecord_writer.hpp"

namespace shardflow::io::test {

struct Framed {
  std::string bytes;
  std::vector<uint64_t> offsets;  // of each record's header
  std::vector<std::string> records;
};

inline Framed Frame(const std::vector<std::string>& records) {
  Framed f;
  for (const std::string& r : records) {
    f.offsets.push_back(f.bytes.size());
    AppendTFRecord(r, &f.bytes);
  }
  f.records = records;
  return f;
}

inline std::vector<std::string> NumberedRecords(int n, size_t base_len = 20) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s = "record-" + std::to_string(i) + "-";
    s.resize(base_len + static_cast<size_t>(i) * 3, static_cast<char>('a' + i % 26));
    out.push_back(s);
  }
  return out;
}

struct ReadResult {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::vector<int64_t> indices;
  Status status;  // the error that stopped reading, or ok
  TFRecordReader::SkipStats skipped;
};

inline ReadResult ReadAllRecords(const std::string& path, TFRecordReaderOptions options) {
  ReadResult result;
  TFRecordReader reader(path, options);
  TFRecordReader::Record rec;
  while (true) {
    bool end = false;
    Status s = reader.TryNext(&rec, &end);
    if (!s.ok()) {
      result.status = s;
      break;
    }
    if (end) break;
    result.records.emplace_back(rec.data);
    result.offsets.push_back(rec.offset);
    result.indices.push_back(rec.index);
  }
  result.skipped = reader.skipped();
  return result;
}

}  // namespace shardflow::io::test
