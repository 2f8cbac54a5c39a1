// In-memory sources: feeding a pipeline from memory, and an in-memory RecordSource for tests
// and for data that is already in RAM.
//
// TensorSlices: columns are tensors whose first dimension is the element index (all equal);
// element i has, per column, the row Slice(i, i+1) reshaped to drop the first dimension. The
// rows share the columns' storage (no copy); the caller's tensors must stay unchanged while the
// pipeline runs. Element ids are the row indices.
//
// InMemoryRecordSource: "files" made of byte-string records, laid out as if each record had an
// 8-byte header (so records have byte offsets and byte ranges are meaningful). It supports
// byte ranges and can inject faults: a missing file (kNotFound on Open) and a corrupt record
// (kDataLoss when it is read) — the same errors a real format reports.
// Thread-safety: const methods may be called concurrently.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/pipeline/iterator.hpp"
#include "io/pipeline/record_source.hpp"

namespace shardflow::pipeline {

// REQUIRES nothing; throws Error(kInvalidArgument) when columns are empty, scalar, or their
// first dimensions differ.
NodePtr MakeTensorSlicesNode(std::vector<std::pair<std::string, Tensor>> columns);

class InMemoryRecordSource : public RecordSource {
 public:
  static constexpr uint64_t kHeaderBytes = 8;
  // files[i] = (name, records). Records become feature "bytes": uint8[n].
  explicit InMemoryRecordSource(
      std::vector<std::pair<std::string, std::vector<std::string>>> files);
  void MarkMissing(size_t file_index) { missing_.insert(file_index); }
  void MarkCorrupt(size_t file_index, int64_t record) { corrupt_.insert({file_index, record}); }

  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  bool SupportsByteRanges() const override { return true; }
  std::string FormatDescription() const override { return "memory-records"; }

 private:
  friend class InMemoryRecordReader;
  std::vector<std::pair<std::string, std::vector<std::string>>> files_;
  std::vector<std::vector<uint64_t>> offsets_;  // per file, per record
  std::vector<FileInfo> infos_;
  std::set<size_t> missing_;
  std::set<std::pair<size_t, int64_t>> corrupt_;
};

}  // namespace shardflow::pipeline
