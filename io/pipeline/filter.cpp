// filter(predicate): keeps the elements for which predicate returns true.
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

class FilterNode : public DatasetNode {
 public:
  FilterNode(NodePtr input, Predicate p, std::string name)
      : input_(std::move(input)), predicate_(std::move(p)), name_(std::move(name)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override { return "filter(" + name_ + ")<-" + input_->Describe(); }
  NodePtr input_;
  Predicate predicate_;
  std::string name_;
};

class FilterIterator : public SequentialIterator {
 public:
  FilterIterator(const IteratorContext& ctx, const FilterNode* node)
      : SequentialIterator(ctx, "filter(" + node->name_ + ")"),
        node_(node),
        input_(node->input_->MakeIterator(ctx)) {}
  bool NextImpl(Element* out) override {
    while (Pull(input_.get(), out)) {
      bool keep = false;
      try {
        keep = node_->predicate_(*out);
      } catch (...) {
        RethrowInStage("filter(" + node_->name_ + ")", &out->where);
      }
      if (keep) return true;
    }
    return false;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("filter");
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("filter");
    input_->Restore(r);
  }

 private:
  const FilterNode* node_;
  std::unique_ptr<Iterator> input_;
};

std::unique_ptr<Iterator> FilterNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<FilterIterator>(ctx, this);
}

}  // namespace

NodePtr MakeFilterNode(NodePtr input, Predicate predicate, std::string name) {
  if (!predicate) throw Error(ErrorCode::kInvalidArgument, "filter: empty predicate");
  return std::make_shared<FilterNode>(std::move(input), std::move(predicate), std::move(name));
}

}  // namespace shardflow::pipeline
