// shuffle(buffer, seed, reshuffle_each_iteration) and the fused shuffle-and-repeat.
//
// Algorithm (the tf.data window shuffle): keep a buffer of up to B elements (and at most
// buffer_bytes); fill it from the input, then each output draws a uniformly random slot j,
// emits buffer[j] and refills slot j with the next input element (or, once the input is
// exhausted, moves the last element into j). Draw number d of pass e uses
// CounterRng(seed, e, d), so the order depends only on (seed, epoch, input order) — never on
// threads or timing. With reshuffle_each_iteration = false the epoch is fixed at 0.
//
// Fused with repeat(count): when pass e's input ends, pass e+1's input is opened and keeps the
// buffer full while pass e drains, so the consumer never waits for a cold refill at an epoch
// boundary. The byte bound counts Element::ByteSize() of buffered elements; one element larger
// than the bound is still admitted (the buffer then holds just it), so the stream never stalls.
// Naive twin: tests/io/pipeline_shuffle_test.cpp reimplements the draw sequence on indices.
#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {
namespace {

class ShuffleNode : public DatasetNode {
 public:
  ShuffleNode(NodePtr input, const ShuffleOptions& options, int64_t repeat)
      : input_(std::move(input)), options_(options), repeat_(repeat) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "shuffle(" + std::to_string(options_.buffer_elements) + "," +
           std::to_string(options_.seed) + "," +
           (options_.reshuffle_each_iteration ? "reshuffle" : "fixed") +
           ",repeat=" + std::to_string(repeat_) + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (repeat_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    return n < 0 ? n : n * repeat_;
  }
  NodePtr input_;
  ShuffleOptions options_;
  int64_t repeat_;  // 1: plain shuffle
};

class ShuffleIterator : public SequentialIterator {
 public:
  ShuffleIterator(const IteratorContext& ctx, const ShuffleNode* node)
      : SequentialIterator(ctx, "shuffle(" + std::to_string(node->options_.buffer_elements) + ")"),
        node_(node),
        ctx_(ctx) {}
  ~ShuffleIterator() override {
    stats().AddBuffered(-static_cast<int64_t>(buffer_.size()), -bytes_);
  }

  bool NextImpl(Element* out) override {
    if (!started_) {
      started_ = true;
      Element e;
      while (Room() && PullNext(&e)) {
        AddBytes(e);
        buffer_.push_back(std::move(e));
      }
    }
    if (buffer_.empty()) return false;
    CounterRng rng(node_->options_.seed, static_cast<uint64_t>(DrawEpoch()),
                   static_cast<uint64_t>(draws_), /*stream=*/0x53485546);
    ++draws_;
    const size_t j = rng.UniformInt(buffer_.size());
    *out = std::move(buffer_[j]);
    const int64_t size = static_cast<int64_t>(out->ByteSize());
    bytes_ -= size;
    stats().AddBuffered(-1, -size);
    // Refill slot j from the input, or close the gap with the last element.
    Element next;
    if (Room(/*hole=*/1) && PullNext(&next)) {
      AddBytes(next);
      buffer_[j] = std::move(next);
    } else {
      buffer_[j] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    return true;
  }

  void Save(StateWriter* w) override {
    w->WriteTag("shuffle");
    w->WriteI64(draws_);
    w->WriteI64(passes_done_);
    w->WriteI64(produced_in_pass_);
    w->WriteBool(exhausted_);
    w->WriteBool(started_);
    w->WriteBool(input_ != nullptr);
    if (input_) input_->Save(w);
    w->WriteU64(buffer_.size());
    for (const auto& e : buffer_) w->WriteElement(e);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("shuffle");
    draws_ = r->ReadI64();
    passes_done_ = r->ReadI64();
    produced_in_pass_ = r->ReadI64();
    exhausted_ = r->ReadBool();
    started_ = r->ReadBool();
    input_.reset();
    if (r->ReadBool()) {
      input_ = node_->input_->MakeIterator(InputContext());
      input_->Restore(r);
    }
    stats().AddBuffered(-static_cast<int64_t>(buffer_.size()), -bytes_);
    buffer_.clear();
    bytes_ = 0;
    const uint64_t n = r->ReadU64();
    for (uint64_t i = 0; i < n; ++i) {
      buffer_.push_back(r->ReadElement());
      AddBytes(buffer_.back());
    }
  }

 private:
  bool fused() const { return node_->repeat_ != 1; }
  // Plain shuffle: the pass number comes from an enclosing repeat. Fused: counted here.
  int64_t DrawEpoch() const {
    if (!node_->options_.reshuffle_each_iteration) return 0;
    return fused() ? passes_done_ : ctx_.epoch;
  }
  IteratorContext InputContext() const {
    IteratorContext sub = ctx_;
    if (fused()) sub.epoch = passes_done_;
    return sub;
  }
  // Whether one more element fits; `hole` slots of the buffer are moved-from (not counted).
  bool Room(size_t hole = 0) const {
    const int64_t held = static_cast<int64_t>(buffer_.size() - hole);
    return held < node_->options_.buffer_elements &&
           (bytes_ < node_->options_.buffer_bytes || held == 0);
  }
  void AddBytes(const Element& e) {
    const int64_t size = static_cast<int64_t>(e.ByteSize());
    bytes_ += size;
    stats().AddBuffered(1, size);
  }
  // The next input element, opening the next pass's input when fused with repeat.
  bool PullNext(Element* e) {
    const int64_t passes = fused() ? node_->repeat_ : 1;
    while (!exhausted_) {
      if (!input_) {
        if (passes >= 0 && passes_done_ >= passes) {
          exhausted_ = true;
          break;
        }
        input_ = node_->input_->MakeIterator(InputContext());
        produced_in_pass_ = 0;
      }
      if (Pull(input_.get(), e)) {
        ++produced_in_pass_;
        return true;
      }
      input_.reset();
      ++passes_done_;
      if (produced_in_pass_ == 0) exhausted_ = true;  // empty input: do not spin forever
    }
    return false;
  }

  const ShuffleNode* node_;
  IteratorContext ctx_;
  std::unique_ptr<Iterator> input_;
  std::vector<Element> buffer_;
  int64_t bytes_ = 0;
  int64_t passes_done_ = 0;  // input passes fully read
  int64_t produced_in_pass_ = 0;
  int64_t draws_ = 0;
  bool exhausted_ = false;
  bool started_ = false;
};

std::unique_ptr<Iterator> ShuffleNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<ShuffleIterator>(ctx, this);
}

void Validate(const ShuffleOptions& o) {
  if (o.buffer_elements < 1 || o.buffer_bytes < 1) {
    throw Error(ErrorCode::kInvalidArgument, "shuffle: buffer must hold at least one element",
                {.key = "shuffle_buffer"});
  }
}

}  // namespace

NodePtr MakeShuffleNode(NodePtr input, const ShuffleOptions& options) {
  Validate(options);
  return std::make_shared<ShuffleNode>(std::move(input), options, 1);
}

NodePtr MakeShuffleAndRepeatNode(NodePtr input, const ShuffleOptions& options, int64_t count) {
  Validate(options);
  if (count == 1) return MakeShuffleNode(std::move(input), options);
  return std::make_shared<ShuffleNode>(std::move(input), options, count);
}

}  // namespace shardflow::pipeline
