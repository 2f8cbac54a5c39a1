#include "io/pipeline/dataset.hpp"

#include "io/pipeline/memory_source.hpp"
#include "io/pipeline/record_dataset.hpp"

namespace shardflow::pipeline {
namespace {
constexpr uint64_t kStateMagic = 0x3130544954494653ull;  // the bytes "SFITIT01"
}  // namespace

Dataset::Dataset(NodePtr node) : node_(std::move(node)) {
  if (!node_) throw Error(ErrorCode::kInternal, "Dataset from a null node");
}

Dataset Dataset::FromTensors(std::vector<std::pair<std::string, Tensor>> columns) {
  return Dataset(MakeTensorSlicesNode(std::move(columns)));
}

Dataset Dataset::FromRecordSource(std::shared_ptr<const RecordSource> source, const ShardPlan& plan,
                                  const InterleaveOptions& reads) {
  if (!source) throw Error(ErrorCode::kInvalidArgument, "FromRecordSource: null source");
  NodePtr units = MakeShardUnitsNode(source, plan);
  const int stride = plan.record_stride, offset = plan.record_offset, width = plan.record_width;
  DatasetFn read = [source, stride, offset, width](const Element& unit) {
    return MakeReadUnitNode(source, UnitFromElement(unit), stride, offset, width);
  };
  return Dataset(MakeInterleaveNode(units, std::move(read), reads));
}

Dataset Dataset::Shard(int64_t n, int64_t i) const { return Dataset(MakeShardNode(node_, n, i)); }
Dataset Dataset::Filter(Predicate p, std::string name) const {
  return Dataset(MakeFilterNode(node_, std::move(p), std::move(name)));
}
Dataset Dataset::Take(int64_t n) const { return Dataset(MakeTakeNode(node_, n)); }
Dataset Dataset::Skip(int64_t n) const { return Dataset(MakeSkipNode(node_, n)); }
Dataset Dataset::Repeat(int64_t n) const { return Dataset(MakeRepeatNode(node_, n)); }
Dataset Dataset::Shuffle(const ShuffleOptions& o) const {
  return Dataset(MakeShuffleNode(node_, o));
}
Dataset Dataset::ShuffleAndRepeat(const ShuffleOptions& o, int64_t n) const {
  return Dataset(MakeShuffleAndRepeatNode(node_, o, n));
}
Dataset Dataset::Map(MapFn fn, const MapOptions& o) const {
  return Dataset(MakeMapNode(node_, std::move(fn), o));
}
Dataset Dataset::MapAndBatch(MapFn fn, int64_t b, bool drop, const MapOptions& o) const {
  return Dataset(MakeMapAndBatchNode(node_, std::move(fn), b, drop, o));
}
Dataset Dataset::Batch(int64_t b, bool drop) const {
  return Dataset(MakeBatchNode(node_, b, drop));
}
Dataset Dataset::PaddedBatch(int64_t b, bool drop, const PaddedBatchOptions& o) const {
  return Dataset(MakePaddedBatchNode(node_, b, drop, o));
}
Dataset Dataset::Unbatch() const { return Dataset(MakeUnbatchNode(node_)); }
Dataset Dataset::PackSequences(const PackOptions& options) const {
  return Dataset(MakePackSequencesNode(node_, options));
}
Dataset Dataset::BucketBySequenceLength(const BucketOptions& options) const {
  return Dataset(MakeBucketBySequenceLengthNode(node_, options));
}
Dataset Dataset::Interleave(DatasetFn fn, const InterleaveOptions& o) const {
  return Dataset(MakeInterleaveNode(node_, std::move(fn), o));
}
Dataset Dataset::Cache(const std::string& path, bool refill_damaged) const {
  return Dataset(MakeCacheNode(node_, path, refill_damaged));
}
Dataset Dataset::Prefetch(int64_t n) const { return Dataset(MakePrefetchNode(node_, n)); }

PipelineIterator Dataset::MakeIterator(const IteratorOptions& options) const {
  PipelineIterator it;
  IteratorContext ctx;
  it.stats_ = ctx.stats;
  if (options.autotune) {
    it.tuner_ = std::make_shared<Autotuner>(options.tuner);
    ctx.autotuner = it.tuner_;
  }
  it.node_ = node_;
  it.root_ = node_->MakeIterator(ctx);
  it.description_hash_ = HashString(node_->Describe());
  return it;
}

bool PipelineIterator::Next(Element* out) { return root_->Next(out); }

std::string PipelineIterator::SaveState() {
  StateWriter w;
  w.WriteU64(kStateMagic);
  w.WriteU64(1);  // version
  w.WriteU64(description_hash_);
  root_->Save(&w);
  return w.Release();
}

void PipelineIterator::RestoreState(const std::string& blob) {
  StateReader r(blob);
  if (r.ReadU64() != kStateMagic) {
    throw Error(ErrorCode::kDataLoss, "not a shardflow iterator state blob");
  }
  const uint64_t version = r.ReadU64();
  if (version != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "iterator state version " + std::to_string(version) + " is not supported");
  }
  if (r.ReadU64() != description_hash_) {
    throw Error(ErrorCode::kInvalidArgument, "iterator state was saved from a different pipeline",
                {.hint = "files, shard plan or stages changed since the checkpoint"});
  }
  root_->Restore(&r);
  if (!r.AtEnd()) {
    throw Error(ErrorCode::kDataLoss, "iterator state blob has trailing bytes");
  }
}

}  // namespace shardflow::pipeline
