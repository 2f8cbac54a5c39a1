// pack_sequences (nodes.hpp): GPT-style language-model packing of a stream of token sequences.
#include <algorithm>

#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

constexpr const char* kStage = "pack_sequences";

class PackNode : public DatasetNode {
 public:
  PackNode(NodePtr input, PackOptions o) : input_(std::move(input)), o_(std::move(o)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return std::string(kStage) + "(" + o_.feature + "," + std::to_string(o_.block) +
           ",end=" + std::to_string(o_.end_id) + "," + o_.input + "," + o_.target + ")<-" +
           input_->Describe();
  }
  NodePtr input_;
  PackOptions o_;
};

class PackIterator : public SequentialIterator {
 public:
  PackIterator(const IteratorContext& ctx, const PackNode* node)
      : SequentialIterator(ctx, kStage), o_(node->o_), input_(node->input_->MakeIterator(ctx)) {}

  // Pulls documents until the stream holds a block and its next token, then hands out
  // stream[0, T) and stream[1, T + 1) and keeps stream[T] on as the next block's first token.
  // A block has the id and provenance of the document its first token comes from.
  bool NextImpl(Element* out) override {
    const auto need = static_cast<size_t>(o_.block + 1);
    while (stream_.size() < need) {
      Element doc;
      if (!Pull(input_.get(), &doc)) return false;  // the tail is no block
      Append(doc);
    }
    Tensor input(DType::kInt64, {o_.block}), target(DType::kInt64, {o_.block});
    std::copy_n(stream_.begin(), o_.block, input.data<int64_t>());
    std::copy_n(stream_.begin() + 1, o_.block, target.data<int64_t>());
    Element e;
    e.id = docs_.front().id;
    e.where = docs_.front().where;
    e.features.emplace_back(o_.input, std::move(input));
    e.features.emplace_back(o_.target, std::move(target));
    stream_.erase(stream_.begin(), stream_.begin() + o_.block);
    for (Doc& d : docs_) d.end -= o_.block;
    while (!docs_.empty() && docs_.front().end <= 0) docs_.erase(docs_.begin());
    *out = std::move(e);
    return true;
  }

  void Save(StateWriter* w) override {
    w->WriteTag(kStage);
    Tensor pending(DType::kInt64, {static_cast<int64_t>(stream_.size())});
    std::copy(stream_.begin(), stream_.end(), pending.data<int64_t>());
    w->WriteTensor(pending);
    w->WriteI64(static_cast<int64_t>(docs_.size()));
    for (const Doc& d : docs_) {
      w->WriteI64(d.end);
      w->WriteI64(d.id);
    }
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag(kStage);
    const Tensor pending = r->ReadTensor();
    const int64_t n = r->ReadI64();
    if (pending.dtype() != DType::kInt64 || pending.rank() != 1 || n < 0 ||
        n > pending.num_elements()) {
      throw Error(ErrorCode::kDataLoss,
                  std::string("stage '") + kStage + "': a damaged stream in the saved state");
    }
    stream_.assign(pending.data<int64_t>(), pending.data<int64_t>() + pending.num_elements());
    docs_.clear();
    for (int64_t i = 0; i < n; ++i) {
      Doc d;
      d.end = r->ReadI64();
      d.id = r->ReadI64();
      docs_.push_back(d);  // (its provenance is not kept: errors name the stage only)
    }
    input_->Restore(r);
  }

 private:
  struct Doc {
    int64_t end = 0;  // where its tokens (and its end id) end in stream_
    int64_t id = -1;
    Provenance where;
  };

  // A document's int64 tokens [n], then the end id.
  void Append(const Element& doc) {
    const Tensor* t = nullptr;
    try {
      t = &doc.Get(o_.feature);
    } catch (...) {
      RethrowInStage(kStage, &doc.where);
    }
    if (t->dtype() != DType::kInt64 || t->rank() != 1) {
      ErrorContext ctx = doc.where.Context();
      ctx.key = o_.feature;
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("stage '") + kStage + "': feature '" + o_.feature + "' is " +
                      DTypeName(t->dtype()) + " " + ShapeToString(t->shape()) +
                      ", expected int64 token ids [n]",
                  ctx);
    }
    const int64_t* ids = t->data<int64_t>();
    stream_.insert(stream_.end(), ids, ids + t->num_elements());
    if (o_.end_id >= 0) stream_.push_back(o_.end_id);
    const auto end = static_cast<int64_t>(stream_.size());
    if (docs_.empty() || end > docs_.back().end) docs_.push_back({end, doc.id, doc.where});
  }

  const PackOptions& o_;
  std::unique_ptr<Iterator> input_;
  std::vector<int64_t> stream_;  // the tokens no block has used as its start yet
  std::vector<Doc> docs_;        // the documents stream_'s tokens come from, in order
};

std::unique_ptr<Iterator> PackNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<PackIterator>(ctx, this);
}

}  // namespace

int64_t PackedBlocksOf(int64_t stream_tokens, int64_t block) {
  return stream_tokens > block ? (stream_tokens - 1) / block : 0;
}

NodePtr MakePackSequencesNode(NodePtr input, const PackOptions& options) {
  if (options.block < 1 || options.feature.empty() || options.input == options.target) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("stage '") + kStage +
                    "' needs a block >= 1, a token feature and two output names",
                {.key = "pack"});
  }
  return std::make_shared<PackNode>(std::move(input), options);
}

}  // namespace shardflow::pipeline
