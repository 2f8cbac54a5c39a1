#include "io/pipeline/record_dataset.hpp"

#include <optional>

#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

// A record filter's width in a node's description ("" for 1: descriptions of unweighted plans
// are as they were).
std::string WidthSuffix(int width) {
  std::string out;
  if (width != 1) {
    out.push_back('x');
    out.append(std::to_string(width));
  }
  return out;
}

Tensor Scalar(int64_t v) {
  Tensor t(DType::kInt64, {});
  *t.data<int64_t>() = v;
  return t;
}

std::string DescribeFiles(const RecordSource& source) {
  std::string d = source.FormatDescription() + "[";
  for (const auto& f : source.Files()) {
    d += f.name + ":" + std::to_string(f.size_bytes) + ":" + std::to_string(f.mtime_ns) + ",";
  }
  return d + "]";
}

class ShardUnitsNode : public DatasetNode {
 public:
  ShardUnitsNode(std::shared_ptr<const RecordSource> source, ShardPlan plan)
      : source_(std::move(source)), plan_(std::move(plan)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    std::string d =
        "units(" + DescribeFiles(*source_) + ",policy=" + ShardPolicyName(plan_.policy) + ",";
    for (const auto& u : plan_.units) {
      d += std::to_string(u.file_index) + "@" + std::to_string(u.range.begin) + "-" +
           std::to_string(u.range.end) + ";";
    }
    if (plan_.next_unit) d += "provided;";
    return d + "stride=" + std::to_string(plan_.record_stride) + "/" +
           std::to_string(plan_.record_offset) + WidthSuffix(plan_.record_width) + ")";
  }
  int64_t Cardinality() const override {
    return plan_.next_unit ? kUnknownCardinality : static_cast<int64_t>(plan_.units.size());
  }
  const ShardPlan& plan() const { return plan_; }

 private:
  std::shared_ptr<const RecordSource> source_;
  ShardPlan plan_;
};

class ShardUnitsIterator : public SequentialIterator {
 public:
  ShardUnitsIterator(const IteratorContext& ctx, const ShardUnitsNode* node)
      : SequentialIterator(ctx, "files"), node_(node) {}
  bool NextImpl(Element* out) override {
    const auto& units = node_->plan().units;
    std::optional<ShardUnit> provided;
    if (node_->plan().next_unit) {
      provided = node_->plan().next_unit();
      if (!provided) return false;
    } else if (next_ >= units.size()) {
      return false;
    }
    const ShardUnit& u = provided ? *provided : units[next_];
    Element e;
    e.features.emplace_back("file_index", Scalar(static_cast<int64_t>(u.file_index)));
    e.features.emplace_back("begin", Scalar(static_cast<int64_t>(u.range.begin)));
    e.features.emplace_back("end", Scalar(static_cast<int64_t>(u.range.end)));
    e.id = static_cast<int64_t>(next_);
    e.where.file_index = static_cast<int64_t>(u.file_index);
    ++next_;
    *out = std::move(e);
    return true;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("files");
    w->WriteU64(next_);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("files");
    next_ = r->ReadU64();
  }

 private:
  const ShardUnitsNode* node_;
  size_t next_ = 0;
};

std::unique_ptr<Iterator> ShardUnitsNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<ShardUnitsIterator>(ctx, this);
}

class ReadUnitNode : public DatasetNode {
 public:
  ReadUnitNode(std::shared_ptr<const RecordSource> source, ShardUnit unit, int stride, int offset,
               int width)
      : source_(std::move(source)), unit_(unit), stride_(stride), offset_(offset), width_(width) {
    const auto& files = source_->Files();
    if (unit_.file_index >= files.size()) {
      throw Error(ErrorCode::kInternal, "shard unit names file " +
                                            std::to_string(unit_.file_index) + " of " +
                                            std::to_string(files.size()));
    }
    file_ = std::make_shared<const std::string>(files[unit_.file_index].name);
  }
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "read(" + *file_ + "@" + std::to_string(unit_.range.begin) + "-" +
           std::to_string(unit_.range.end) + ",stride=" + std::to_string(stride_) + "/" +
           std::to_string(offset_) + WidthSuffix(width_) + ")";
  }

  std::shared_ptr<const RecordSource> source_;
  ShardUnit unit_;
  int stride_, offset_, width_;  // keep (record + file) % stride in [offset, offset + width)
  std::shared_ptr<const std::string> file_;
};

class ReadUnitIterator : public SequentialIterator {
 public:
  ReadUnitIterator(const IteratorContext& ctx, const ReadUnitNode* node)
      : SequentialIterator(ctx, "read"), node_(node) {}
  bool NextImpl(Element* out) override {
    Provenance where;
    where.file = node_->file_;
    where.file_index = static_cast<int64_t>(node_->unit_.file_index);
    try {
      if (!reader_) {
        reader_ = node_->source_->Open(node_->unit_.file_index, node_->unit_.range);
        if (seek_to_) reader_->Seek(*seek_to_);
      }
      while (true) {
        Element e;
        if (!reader_->Next(&e)) return false;
        if (node_->stride_ > 1) {
          if (e.where.record < 0) {
            throw Error(ErrorCode::kInternal,
                        "record shard policy needs record indices from the reader");
          }
          if (!InRecordWindow(e.where.record, node_->unit_.file_index, node_->stride_,
                              node_->offset_, node_->width_)) {
            continue;
          }
        }
        e.where.file = node_->file_;
        e.where.file_index = where.file_index;
        e.id = MakeElementId(where.file_index, e.where.offset);
        *out = std::move(e);
        return true;
      }
    } catch (...) {
      RethrowInStage("read", &where);
    }
  }
  void Save(StateWriter* w) override {
    w->WriteTag("read");
    w->WriteBool(reader_ != nullptr || seek_to_.has_value());
    ReaderPosition p = reader_ ? reader_->Position() : seek_to_.value_or(ReaderPosition{});
    w->WriteU64(p.offset);
    w->WriteI64(p.record);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("read");
    const bool started = r->ReadBool();
    ReaderPosition p;
    p.offset = r->ReadU64();
    p.record = r->ReadI64();
    reader_.reset();
    if (started) seek_to_ = p;
  }

 private:
  const ReadUnitNode* node_;
  std::unique_ptr<RecordReader> reader_;
  std::optional<ReaderPosition> seek_to_;
};

std::unique_ptr<Iterator> ReadUnitNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<ReadUnitIterator>(ctx, this);
}

}  // namespace

NodePtr MakeShardUnitsNode(std::shared_ptr<const RecordSource> source, const ShardPlan& plan) {
  return std::make_shared<ShardUnitsNode>(std::move(source), plan);
}

NodePtr MakeReadUnitNode(std::shared_ptr<const RecordSource> source, const ShardUnit& unit,
                         int record_stride, int record_offset, int record_width) {
  return std::make_shared<ReadUnitNode>(std::move(source), unit, record_stride, record_offset,
                                        record_width);
}

ShardUnit UnitFromElement(const Element& e) {
  ShardUnit u;
  u.file_index = static_cast<size_t>(*e.Get("file_index").data<int64_t>());
  u.range.begin = static_cast<uint64_t>(*e.Get("begin").data<int64_t>());
  u.range.end = static_cast<uint64_t>(*e.Get("end").data<int64_t>());
  return u;
}

}  // namespace shardflow::pipeline
