// shard(num, index): keeps every num-th element of each pass, starting at index.
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {
namespace {

class ShardNode : public DatasetNode {
 public:
  ShardNode(NodePtr input, int64_t num, int64_t index)
      : input_(std::move(input)), num_(num), index_(index) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "shard(" + std::to_string(num_) + "," + std::to_string(index_) + ")<-" +
           input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return n > index_ ? (n - index_ + num_ - 1) / num_ : 0;
  }
  NodePtr input_;
  int64_t num_, index_;
};

class ShardIterator : public SequentialIterator {
 public:
  ShardIterator(const IteratorContext& ctx, const ShardNode* node)
      : SequentialIterator(ctx, "shard"), node_(node), input_(node->input_->MakeIterator(ctx)) {}
  bool NextImpl(Element* out) override {
    while (Pull(input_.get(), out)) {
      if (position_++ % node_->num_ == node_->index_) return true;
    }
    return false;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("shard");
    w->WriteI64(position_);
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("shard");
    position_ = r->ReadI64();
    input_->Restore(r);
  }

 private:
  const ShardNode* node_;
  std::unique_ptr<Iterator> input_;
  int64_t position_ = 0;
};

std::unique_ptr<Iterator> ShardNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<ShardIterator>(ctx, this);
}

}  // namespace

NodePtr MakeShardNode(NodePtr input, int64_t num_shards, int64_t index) {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    throw Error(ErrorCode::kInvalidArgument, "shard: need 0 <= index < num_shards, got index " +
                                                 std::to_string(index) + " of " +
                                                 std::to_string(num_shards));
  }
  return std::make_shared<ShardNode>(std::move(input), num_shards, index);
}

}  // namespace shardflow::pipeline
