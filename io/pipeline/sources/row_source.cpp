#include "io/pipeline/sources/row_source.hpp"

#include <algorithm>

namespace shardflow::pipeline {
namespace {

int64_t FirstRowAtOrAfter(uint64_t offset, uint64_t row_bytes, int64_t rows) {
  const uint64_t k = offset / row_bytes + (offset % row_bytes != 0 ? 1 : 0);
  return static_cast<int64_t>(std::min<uint64_t>(k, static_cast<uint64_t>(rows)));
}

class RowReader : public RecordReader {
 public:
  RowReader(const FileInfo& info, size_t file_index, uint64_t row_bytes,
            const RowSource::Loader& loader, const ByteRange& range, int64_t block_rows)
      : info_(info),
        file_index_(file_index),
        row_bytes_(row_bytes),
        loader_(loader),
        block_rows_(block_rows) {
    begin_ = FirstRowAtOrAfter(range.begin, row_bytes, info.num_records);
    end_ = range.end == ByteRange().end ? info.num_records
                                        : FirstRowAtOrAfter(range.end, row_bytes, info.num_records);
    next_ = begin_;
  }

  bool Next(Element* out) override {
    if (next_ >= end_) return false;
    if (next_ < block_begin_ || next_ >= block_end_) {
      block_begin_ = next_;
      block_end_ = std::min(end_, next_ + block_rows_);
      block_ = loader_(file_index_, block_begin_, block_end_);
      for (const auto& [name, t] : block_) {
        if (t.rank() == 0 || t.dim(0) != block_end_ - block_begin_) {
          throw Error(ErrorCode::kInternal, "row loader returned a wrong block for '" + name + "'",
                      {.file = info_.name, .record = next_});
        }
      }
    }
    out->features.clear();
    const int64_t i = next_ - block_begin_;
    for (const auto& [name, t] : block_) {
      Shape row(t.shape().begin() + 1, t.shape().end());
      out->features.emplace_back(name, t.Slice(i, i + 1).Reshaped(row));
    }
    out->where.record = next_;
    out->where.offset = static_cast<uint64_t>(next_) * row_bytes_;
    ++next_;
    return true;
  }

  ReaderPosition Position() const override {
    return {static_cast<uint64_t>(next_) * row_bytes_, next_};
  }
  void Seek(const ReaderPosition& p) override { next_ = std::clamp(p.record, begin_, end_); }

 private:
  FileInfo info_;
  size_t file_index_;
  uint64_t row_bytes_;
  const RowSource::Loader& loader_;
  int64_t block_rows_;
  int64_t begin_ = 0, end_ = 0, next_ = 0;
  int64_t block_begin_ = 0, block_end_ = 0;
  RowBlock block_;
};

}  // namespace

RowSource::RowSource(std::vector<FileInfo> files, std::vector<uint64_t> row_bytes, Loader loader,
                     std::string description, int64_t block_rows)
    : files_(std::move(files)),
      row_bytes_(std::move(row_bytes)),
      loader_(std::move(loader)),
      description_(std::move(description)),
      block_rows_(std::max<int64_t>(1, block_rows)) {
  if (row_bytes_.size() != files_.size()) {
    throw Error(ErrorCode::kInternal, "RowSource: one row size per file needed");
  }
  for (size_t i = 0; i < files_.size(); ++i) {
    if (row_bytes_[i] == 0 || files_[i].num_records < 0) {
      throw Error(ErrorCode::kInternal, "RowSource: row size and row count needed",
                  {.file = files_[i].name});
    }
    files_[i].size_bytes = static_cast<uint64_t>(files_[i].num_records) * row_bytes_[i];
  }
}

std::unique_ptr<RecordReader> RowSource::Open(size_t file_index, const ByteRange& range) const {
  if (file_index >= files_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<RowReader>(files_[file_index], file_index, row_bytes_[file_index],
                                     loader_, range, block_rows_);
}

std::vector<uint64_t> RowSource::RecordOffsets(size_t file_index) const {
  const FileInfo& info = files_.at(file_index);
  std::vector<uint64_t> offsets(static_cast<size_t>(info.num_records));
  for (size_t k = 0; k < offsets.size(); ++k) offsets[k] = k * row_bytes_[file_index];
  return offsets;
}

}  // namespace shardflow::pipeline
