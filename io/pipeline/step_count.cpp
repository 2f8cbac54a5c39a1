#include "io/pipeline/step_count.hpp"

#include "core/logging.hpp"

namespace shardflow::pipeline {
namespace {

class LimitStepsNode : public DatasetNode {
 public:
  LimitStepsNode(NodePtr input, int64_t agreed, std::shared_ptr<StepLimitReport> report)
      : input_(std::move(input)), agreed_(agreed), report_(std::move(report)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "limit_steps(" + std::to_string(agreed_) + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    return n < 0 ? (n == kInfiniteCardinality ? agreed_ : n) : std::min(n, agreed_);
  }
  NodePtr input_;
  int64_t agreed_;
  std::shared_ptr<StepLimitReport> report_;
};

class LimitStepsIterator : public SequentialIterator {
 public:
  LimitStepsIterator(const IteratorContext& ctx, const LimitStepsNode* node)
      : SequentialIterator(ctx, "limit_steps"),
        node_(node),
        input_(node->input_->MakeIterator(ctx)),
        epoch_(ctx.epoch) {}
  bool NextImpl(Element* out) override {
    if (taken_ < node_->agreed_) {
      if (!Pull(input_.get(), out)) return false;
      ++taken_;
      if (node_->report_) node_->report_->steps.fetch_add(1);
      return true;
    }
    if (!drained_) {
      drained_ = true;
      int64_t batches = 0, rows = 0;
      Element rest;
      while (Pull(input_.get(), &rest)) {
        ++batches;
        rows += rest.features.empty() || rest.features[0].second.rank() == 0
                    ? 1
                    : rest.features[0].second.dim(0);
      }
      if (node_->report_) {
        node_->report_->batches_left_out.fetch_add(batches);
        node_->report_->elements_left_out.fetch_add(rows);
      }
      if (batches > 0) {
        SF_LOG(Info) << "epoch " << epoch_ << ": stopped after the agreed " << node_->agreed_
                     << " steps; left out " << batches << " batches (" << rows
                     << " elements) of this rank's shard";
      }
    }
    return false;
  }
  bool Peek(Element* out) override { return taken_ < node_->agreed_ && input_->Peek(out); }
  void Save(StateWriter* w) override {
    w->WriteTag("limit_steps");
    w->WriteI64(taken_);
    w->WriteBool(drained_);
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("limit_steps");
    taken_ = r->ReadI64();
    drained_ = r->ReadBool();
    input_->Restore(r);
  }

 private:
  const LimitStepsNode* node_;
  std::unique_ptr<Iterator> input_;
  int64_t epoch_;
  int64_t taken_ = 0;
  bool drained_ = false;
};

std::unique_ptr<Iterator> LimitStepsNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<LimitStepsIterator>(ctx, this);
}

}  // namespace

int64_t LocalBatchCount(const Dataset& one_pass) {
  const int64_t n = one_pass.Cardinality();
  if (n >= 0) return n;
  if (n == DatasetNode::kInfiniteCardinality) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot count the batches of an infinite dataset (count before repeat)");
  }
  PipelineIterator it = one_pass.MakeIterator({.autotune = false});
  int64_t count = 0;
  Element e;
  while (it.Next(&e)) ++count;
  return count;
}

Dataset LimitSteps(const Dataset& batches, int64_t agreed,
                   std::shared_ptr<StepLimitReport> report) {
  if (agreed < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "agreed step count must be >= 0, got " + std::to_string(agreed));
  }
  return Dataset(std::make_shared<LimitStepsNode>(batches.node(), agreed, std::move(report)));
}

}  // namespace shardflow::pipeline
