// take(n) and skip(n): the first n elements of each pass, or all but them.
#include <algorithm>

#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {
namespace {

class TakeSkipNode : public DatasetNode {
 public:
  TakeSkipNode(NodePtr input, int64_t count, bool take)
      : input_(std::move(input)), count_(count), take_(take) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return std::string(take_ ? "take(" : "skip(") + std::to_string(count_) + ")<-" +
           input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (take_) {
      if (count_ < 0) return n;
      if (n == kInfiniteCardinality) return count_;
      return n < 0 ? n : std::min(n, count_);
    }
    if (n < 0) return n;
    return std::max<int64_t>(0, n - count_);
  }
  NodePtr input_;
  int64_t count_;
  bool take_;
};

class TakeSkipIterator : public SequentialIterator {
 public:
  TakeSkipIterator(const IteratorContext& ctx, const TakeSkipNode* node)
      : SequentialIterator(ctx, node->take_ ? "take" : "skip"),
        node_(node),
        input_(node->input_->MakeIterator(ctx)) {}
  bool NextImpl(Element* out) override {
    if (node_->take_) {
      if (node_->count_ >= 0 && seen_ >= node_->count_) return false;
      if (!Pull(input_.get(), out)) return false;
      ++seen_;
      return true;
    }
    while (seen_ < node_->count_) {
      if (!Pull(input_.get(), out)) return false;
      ++seen_;
    }
    return Pull(input_.get(), out);
  }
  void Save(StateWriter* w) override {
    w->WriteTag(node_->take_ ? "take" : "skip");
    w->WriteI64(seen_);
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag(node_->take_ ? "take" : "skip");
    seen_ = r->ReadI64();
    input_->Restore(r);
  }

 private:
  const TakeSkipNode* node_;
  std::unique_ptr<Iterator> input_;
  int64_t seen_ = 0;
};

std::unique_ptr<Iterator> TakeSkipNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<TakeSkipIterator>(ctx, this);
}

}  // namespace

NodePtr MakeTakeNode(NodePtr input, int64_t count) {
  return std::make_shared<TakeSkipNode>(std::move(input), count, true);
}

NodePtr MakeSkipNode(NodePtr input, int64_t count) {
  if (count < 0) throw Error(ErrorCode::kInvalidArgument, "skip: count must be >= 0");
  return std::make_shared<TakeSkipNode>(std::move(input), count, false);
}

}  // namespace shardflow::pipeline
