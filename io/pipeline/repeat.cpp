// repeat(count): count passes over the input (forever when count < 0). Pass e gets
// IteratorContext::epoch = e, so shuffles and random ops below see a new epoch each pass.
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {
namespace {

class RepeatNode : public DatasetNode {
 public:
  RepeatNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "repeat(" + std::to_string(count_) + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (count_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    return n < 0 ? n : n * count_;
  }
  NodePtr input_;
  int64_t count_;
};

class RepeatIterator : public SequentialIterator {
 public:
  RepeatIterator(const IteratorContext& ctx, const RepeatNode* node)
      : SequentialIterator(ctx, "repeat"), node_(node), ctx_(ctx) {}
  bool NextImpl(Element* out) override {
    while (node_->count_ < 0 || epoch_ < node_->count_) {
      if (!input_) {
        IteratorContext sub = ctx_;
        sub.epoch = epoch_;
        input_ = node_->input_->MakeIterator(sub);
        produced_in_epoch_ = 0;
      }
      if (Pull(input_.get(), out)) {
        ++produced_in_epoch_;
        return true;
      }
      input_.reset();
      ++epoch_;
      if (produced_in_epoch_ == 0) return false;  // empty input: stop instead of spinning
    }
    return false;
  }
  // Within a pass only: the first element of the next pass is not read ahead. (After an error
  // Next rethrows; Peek may still show the input's next element, which Next would not reach.)
  bool Peek(Element* out) override { return input_ != nullptr && input_->Peek(out); }
  void Save(StateWriter* w) override {
    w->WriteTag("repeat");
    w->WriteI64(epoch_);
    w->WriteI64(produced_in_epoch_);
    w->WriteBool(input_ != nullptr);
    if (input_) input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("repeat");
    epoch_ = r->ReadI64();
    produced_in_epoch_ = r->ReadI64();
    input_.reset();
    if (r->ReadBool()) {
      IteratorContext sub = ctx_;
      sub.epoch = epoch_;
      input_ = node_->input_->MakeIterator(sub);
      input_->Restore(r);
    }
  }

 private:
  const RepeatNode* node_;
  IteratorContext ctx_;
  std::unique_ptr<Iterator> input_;
  int64_t epoch_ = 0;
  int64_t produced_in_epoch_ = 0;
};

std::unique_ptr<Iterator> RepeatNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<RepeatIterator>(ctx, this);
}

}  // namespace

NodePtr MakeRepeatNode(NodePtr input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}

}  // namespace shardflow::pipeline
