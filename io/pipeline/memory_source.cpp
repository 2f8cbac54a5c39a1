#include "io/pipeline/memory_source.hpp"

#include <algorithm>
#include <cstring>

namespace shardflow::pipeline {
namespace {

class TensorSlicesNode : public DatasetNode {
 public:
  explicit TensorSlicesNode(std::vector<std::pair<std::string, Tensor>> columns)
      : columns_(std::move(columns)) {
    if (columns_.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "in-memory source needs at least one tensor");
    }
    for (const auto& [name, t] : columns_) {
      if (t.rank() == 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    "in-memory source tensors need a first (element) dimension", {.key = name});
      }
      if (t.dim(0) != columns_[0].second.dim(0)) {
        throw Error(ErrorCode::kInvalidArgument,
                    "in-memory source tensors disagree on the element count: '" + name + "' has " +
                        std::to_string(t.dim(0)) + ", '" + columns_[0].first + "' has " +
                        std::to_string(columns_[0].second.dim(0)),
                    {.key = name});
      }
    }
  }
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    std::string d = "tensors(";
    for (const auto& [name, t] : columns_) {
      d += name + ":" + DTypeName(t.dtype()) + ShapeToString(t.shape()) + ";";
    }
    return d + ")";
  }
  int64_t Cardinality() const override { return columns_[0].second.dim(0); }
  const std::vector<std::pair<std::string, Tensor>>& columns() const { return columns_; }

 private:
  std::vector<std::pair<std::string, Tensor>> columns_;
};

class TensorSlicesIterator : public SequentialIterator {
 public:
  TensorSlicesIterator(const IteratorContext& ctx, const TensorSlicesNode* node)
      : SequentialIterator(ctx, "tensors"), node_(node) {}
  bool NextImpl(Element* out) override {
    if (row_ >= node_->Cardinality()) return false;
    Element e;
    for (const auto& [name, t] : node_->columns()) {
      Shape row_shape(t.shape().begin() + 1, t.shape().end());
      e.features.emplace_back(name, t.Slice(row_, row_ + 1).Reshaped(row_shape));
    }
    e.id = row_;
    e.where.record = row_;
    ++row_;
    *out = std::move(e);
    return true;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("tensors");
    w->WriteI64(row_);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("tensors");
    row_ = r->ReadI64();
  }

 private:
  const TensorSlicesNode* node_;
  int64_t row_ = 0;
};

std::unique_ptr<Iterator> TensorSlicesNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<TensorSlicesIterator>(ctx, this);
}

}  // namespace

NodePtr MakeTensorSlicesNode(std::vector<std::pair<std::string, Tensor>> columns) {
  return std::make_shared<TensorSlicesNode>(std::move(columns));
}

class InMemoryRecordReader : public RecordReader {
 public:
  InMemoryRecordReader(const InMemoryRecordSource* source, size_t file, const ByteRange& range)
      : source_(source), file_(file) {
    const auto& offsets = source_->offsets_[file_];
    // The first record starting at or after range.begin, up to the last starting before end.
    next_ = std::lower_bound(offsets.begin(), offsets.end(), range.begin) - offsets.begin();
    end_ = std::lower_bound(offsets.begin(), offsets.end(), range.end) - offsets.begin();
    know_record_index_ = range.begin == 0;
  }
  bool Next(Element* out) override {
    if (next_ >= end_) return false;
    const auto& name = source_->files_[file_].first;
    const uint64_t offset = source_->offsets_[file_][next_];
    if (source_->corrupt_.count({file_, next_})) {
      throw Error(ErrorCode::kDataLoss, "corrupt record (bad checksum)",
                  {.file = name, .offset = offset, .record = next_});
    }
    const std::string& bytes = source_->files_[file_].second[next_];
    Tensor t(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
    if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
    out->features.clear();
    out->features.emplace_back("bytes", std::move(t));
    out->where.record = know_record_index_ ? next_ : -1;
    out->where.offset = offset;
    ++next_;
    return true;
  }
  ReaderPosition Position() const override {
    return {next_ < end_ ? source_->offsets_[file_][next_] : 0, next_};
  }
  void Seek(const ReaderPosition& p) override { next_ = p.record; }

 private:
  const InMemoryRecordSource* source_;
  size_t file_;
  int64_t next_ = 0, end_ = 0;
  bool know_record_index_ = true;
};

InMemoryRecordSource::InMemoryRecordSource(
    std::vector<std::pair<std::string, std::vector<std::string>>> files)
    : files_(std::move(files)) {
  for (const auto& [name, records] : files_) {
    std::vector<uint64_t> offsets;
    uint64_t at = 0;
    for (const auto& r : records) {
      offsets.push_back(at);
      at += kHeaderBytes + r.size();
    }
    offsets_.push_back(std::move(offsets));
    FileInfo info;
    info.name = name;
    info.size_bytes = at;
    info.num_records = static_cast<int64_t>(records.size());
    infos_.push_back(info);
  }
}

std::unique_ptr<RecordReader> InMemoryRecordSource::Open(size_t file_index,
                                                         const ByteRange& range) const {
  if (file_index >= files_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  if (missing_.count(file_index)) {
    throw Error(ErrorCode::kNotFound, "input file does not exist",
                {.file = files_[file_index].first});
  }
  return std::make_unique<InMemoryRecordReader>(this, file_index, range);
}

}  // namespace shardflow::pipeline
