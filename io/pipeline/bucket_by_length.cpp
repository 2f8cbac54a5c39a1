// bucket_by_sequence_length (nodes.hpp): elements grouped by length into buckets, each batched
// and padded when full, the partial ones at the input's end.
#include <algorithm>

#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

constexpr const char* kStage = "bucket_by_sequence_length";

[[noreturn]] void Bad(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, std::string("stage '") + kStage + "': " + what,
              {.key = "bucket_boundaries"});
}

void CheckOptions(const BucketOptions& o) {
  if (o.boundaries.empty()) Bad("needs at least one bucket boundary");
  for (size_t i = 0; i < o.boundaries.size(); ++i) {
    if (o.boundaries[i] < 1 || (i > 0 && o.boundaries[i] <= o.boundaries[i - 1])) {
      Bad("boundaries must be >= 1 and strictly increasing");
    }
  }
  if (o.batch_sizes.size() != o.boundaries.size() + 1) {
    Bad("needs one batch size per bucket (" + std::to_string(o.boundaries.size() + 1) + " for " +
        std::to_string(o.boundaries.size()) + " boundaries), got " +
        std::to_string(o.batch_sizes.size()));
  }
  for (const int64_t b : o.batch_sizes) {
    if (b < 1) Bad("batch sizes must be >= 1");
  }
}

class BucketNode : public DatasetNode {
 public:
  BucketNode(NodePtr input, BucketOptions o) : input_(std::move(input)), o_(std::move(o)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    std::string d = std::string(kStage) + "(" + o_.length_feature + ",bounds=";
    for (const int64_t b : o_.boundaries) d.append(std::to_string(b)).append(" ");
    d += ",sizes=";
    for (const int64_t b : o_.batch_sizes) d.append(std::to_string(b)).append(" ");
    if (o_.pad_to_bucket_boundary) {
      d += ",to_boundary";
      for (const auto& f : o_.sequence_features) d.append(":").append(f);
    }
    if (o_.drop_remainder) d += ",drop";
    d += ",pad=" + std::to_string(o_.padding.padding_value) + PaddingText(o_.padding);
    return d + ")<-" + input_->Describe();
  }
  NodePtr input_;
  BucketOptions o_;
};

class BucketIterator : public SequentialIterator {
 public:
  BucketIterator(const IteratorContext& ctx, const BucketNode* node)
      : SequentialIterator(ctx, kStage),
        o_(node->o_),
        input_(node->input_->MakeIterator(ctx)),
        buckets_(o_.batch_sizes.size()) {}

  bool NextImpl(Element* out) override {
    while (!ended_) {
      Element e;
      if (!Pull(input_.get(), &e)) {
        ended_ = true;
        break;
      }
      const int64_t k = BucketOf(o_.boundaries, Length(e));
      auto& bucket = buckets_[static_cast<size_t>(k)];
      bucket.push_back(std::move(e));
      if (static_cast<int64_t>(bucket.size()) == o_.batch_sizes[static_cast<size_t>(k)]) {
        *out = Emit(k);
        return true;
      }
    }
    // The input has ended: the partial buckets in order.
    for (size_t k = 0; k < buckets_.size(); ++k) {
      if (buckets_[k].empty()) continue;
      if (o_.drop_remainder) {
        buckets_[k].clear();
        continue;
      }
      *out = Emit(static_cast<int64_t>(k));
      return true;
    }
    return false;
  }

  void Save(StateWriter* w) override {
    w->WriteTag(kStage);
    w->WriteBool(ended_);
    for (const auto& bucket : buckets_) {
      w->WriteI64(static_cast<int64_t>(bucket.size()));
      for (const Element& e : bucket) w->WriteElement(e);
    }
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag(kStage);
    ended_ = r->ReadBool();
    for (size_t k = 0; k < buckets_.size(); ++k) {
      const int64_t n = r->ReadI64();
      if (n < 0 || n >= o_.batch_sizes[k]) {
        throw Error(ErrorCode::kDataLoss, std::string("stage '") + kStage + "': bucket " +
                                              std::to_string(k) + " holds " + std::to_string(n) +
                                              " elements in the saved state");
      }
      buckets_[k].clear();
      for (int64_t i = 0; i < n; ++i) buckets_[k].push_back(r->ReadElement());
    }
    input_->Restore(r);
  }

 private:
  int64_t Length(const Element& e) const {
    const Tensor* t = nullptr;
    try {
      t = &e.Get(o_.length_feature);
    } catch (...) {
      RethrowInStage(kStage, &e.where);
    }
    int64_t length = -1;
    if (t->rank() > 0) {
      length = t->dim(0);
    } else if (t->dtype() == DType::kInt64) {
      length = *t->data<int64_t>();
    } else if (t->dtype() == DType::kInt32) {
      length = *t->data<int32_t>();
    }
    const bool beyond = o_.pad_to_bucket_boundary && length >= o_.boundaries.back();
    if (length < 0 || beyond) {
      ErrorContext ctx = e.where.Context();
      ctx.key = o_.length_feature;
      throw Error(
          ErrorCode::kInvalidArgument,
          std::string("stage '") + kStage + "': " +
              (beyond ? "length " + std::to_string(length) + " is not below the last boundary " +
                            std::to_string(o_.boundaries.back()) +
                            ", which pad_to_bucket_boundary needs"
                      : "feature '" + o_.length_feature +
                            "' is neither a sequence nor a non-negative integer length"),
          ctx);
    }
    return length;
  }

  Element Emit(int64_t k) {
    auto& bucket = buckets_[static_cast<size_t>(k)];
    PaddedBatchOptions padding = o_.padding;
    if (o_.pad_to_bucket_boundary) {
      for (const std::string& name : o_.sequence_features) {
        const Tensor& first = bucket.front().Get(name);
        Shape shape(static_cast<size_t>(first.rank()), -1);
        if (!shape.empty()) shape[0] = o_.boundaries[static_cast<size_t>(k)] - 1;
        padding.padded_shapes.emplace_back(name, shape);
      }
    }
    Element batch = PadAndStack(bucket, padding, kStage);
    bucket.clear();
    return batch;
  }

  const BucketOptions& o_;
  std::unique_ptr<Iterator> input_;
  std::vector<std::vector<Element>> buckets_;
  bool ended_ = false;
};

std::unique_ptr<Iterator> BucketNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<BucketIterator>(ctx, this);
}

}  // namespace

int64_t BucketOf(const std::vector<int64_t>& boundaries, int64_t length) {
  return std::upper_bound(boundaries.begin(), boundaries.end(), length) - boundaries.begin();
}

int64_t BucketedBatches(const BucketOptions& o, const std::vector<int64_t>& per_bucket) {
  int64_t batches = 0;
  for (size_t k = 0; k < per_bucket.size() && k < o.batch_sizes.size(); ++k) {
    const int64_t b = o.batch_sizes[k];
    batches += o.drop_remainder ? per_bucket[k] / b : (per_bucket[k] + b - 1) / b;
  }
  return batches;
}

NodePtr MakeBucketBySequenceLengthNode(NodePtr input, const BucketOptions& options) {
  CheckOptions(options);
  return std::make_shared<BucketNode>(std::move(input), options);
}

}  // namespace shardflow::pipeline
