// interleave(fn, cycle_length, block_length, num_parallel_reads, deterministic).
//
// Each input element (typically a shard unit: a file or byte range) is turned into a dataset
// by fn. cycle_length of those are open at once; the output takes block_length elements from
// slot 0, then block_length from slot 1, ... round robin. All slots are opened up front, and a
// slot whose dataset ends is refilled at once from the input (the cycle then moves on), so the
// order depends only on the data — never on how many read threads there are.
// With num_parallel_reads > 1 every open slot reads ahead on its own background thread
// (a ParallelMapIterator with no function), so up to cycle_length files are read at once while
// the consumer takes elements in the same order as the sequential interleave. With
// deterministic = false, a slot with nothing ready is skipped for one that has data.
// num_parallel_reads = kAutotune reads ahead on every slot and lets the autotuner deepen each
// slot's read-ahead buffer while the interleave starves on it (the number of files open at
// once stays cycle_length).
#include <algorithm>

#include "io/pipeline/autotune.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/parallel_map.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

class InterleaveNode : public DatasetNode {
 public:
  InterleaveNode(NodePtr input, DatasetFn fn, const InterleaveOptions& options)
      : input_(std::move(input)), fn_(std::move(fn)), options_(options) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    // Parallelism does not change the output order (deterministic) — not part of the key.
    return "interleave(" + std::to_string(options_.cycle_length) + "," +
           std::to_string(options_.block_length) + ")<-" + input_->Describe();
  }
  NodePtr input_;
  DatasetFn fn_;
  InterleaveOptions options_;
};

class InterleaveIterator : public SequentialIterator {
 public:
  InterleaveIterator(const IteratorContext& ctx, const InterleaveNode* node)
      : SequentialIterator(ctx, "interleave"),
        node_(node),
        ctx_(ctx),
        input_(node->input_->MakeIterator(ctx)),
        slots_(node->options_.cycle_length) {}

  bool NextImpl(Element* out) override {
    if (!started_) {
      started_ = true;
      for (auto& slot : slots_) Refill(&slot);
    }
    while (true) {
      if (!AnyActive()) return false;
      if (!node_->options_.deterministic && parallel()) {
        if (TakeAnyReady(out)) return true;
      }
      Slot& slot = slots_[current_];
      if (!slot.it) {
        Advance();
        continue;
      }
      if (Pull(slot.it.get(), out)) {
        if (++taken_ >= node_->options_.block_length) Advance();
        return true;
      }
      slot.it.reset();
      slot.parallel = nullptr;
      Refill(&slot);
      Advance();
    }
  }

  void Save(StateWriter* w) override {
    w->WriteTag("interleave");
    w->WriteBool(started_);
    w->WriteBool(input_exhausted_);
    w->WriteI64(current_);
    w->WriteI64(taken_);
    input_->Save(w);
    for (auto& slot : slots_) {
      w->WriteBool(slot.it != nullptr);
      if (!slot.it) continue;
      w->WriteElement(slot.unit);
      slot.it->Save(w);
    }
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("interleave");
    started_ = r->ReadBool();
    input_exhausted_ = r->ReadBool();
    current_ = r->ReadI64();
    taken_ = r->ReadI64();
    input_->Restore(r);
    for (auto& slot : slots_) {
      slot.it.reset();
      slot.parallel = nullptr;
      if (!r->ReadBool()) continue;
      Open(&slot, r->ReadElement());
      slot.it->Restore(r);
    }
  }

 private:
  struct Slot {
    Element unit;
    NodePtr dataset;  // owns the node `it` reads (declared first: destroyed after it)
    std::unique_ptr<Iterator> it;
    ParallelMapIterator* parallel = nullptr;  // == it when reading ahead
  };
  bool parallel() const { return node_->options_.num_parallel_reads != 1; }
  bool AnyActive() const {
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.it != nullptr; });
  }
  void Advance() {
    current_ = (current_ + 1) % static_cast<int64_t>(slots_.size());
    taken_ = 0;
  }
  void Refill(Slot* slot) {
    if (input_exhausted_) return;
    Element unit;
    if (!Pull(input_.get(), &unit)) {
      input_exhausted_ = true;
      return;
    }
    Open(slot, std::move(unit));
  }
  void Open(Slot* slot, Element unit) {
    NodePtr dataset;
    try {
      dataset = node_->fn_(unit);
    } catch (...) {
      RethrowInStage("interleave", &unit.where);
    }
    slot->unit = std::move(unit);
    slot->it.reset();
    slot->dataset = dataset;
    auto it = dataset->MakeIterator(ctx_);
    if (!parallel()) {
      slot->it = std::move(it);
      return;
    }
    ParallelConfig config;
    config.stage_name = "interleave.read_ahead";
    config.capacity = node_->options_.read_ahead_elements > 0
                          ? node_->options_.read_ahead_elements
                          : 16 + 2 * node_->options_.block_length;
    auto par = std::make_unique<ParallelMapIterator>(ctx_, std::move(it), MapFn(), config);
    slot->parallel = par.get();  // owned by slot->it (directly or through the autotuner)
    if (node_->options_.num_parallel_reads == kAutotune && ctx_.autotuner) {
      slot->it = ctx_.autotuner->Manage(std::move(par), Autotuner::Knob::kBufferDepth);
    } else {
      slot->it = std::move(par);
    }
  }
  // Non-deterministic mode: the first slot in cycle order (from current_) with data ready.
  bool TakeAnyReady(Element* out) {
    for (size_t k = 0; k < slots_.size(); ++k) {
      Slot& slot = slots_[(current_ + k) % slots_.size()];
      if (!slot.parallel) continue;
      const auto poll = slot.parallel->TryNext(out);
      if (poll == ParallelMapIterator::Poll::kReady) {
        if (k != 0) {
          current_ = static_cast<int64_t>((current_ + k) % slots_.size());
          taken_ = 0;
        }
        if (++taken_ >= node_->options_.block_length) Advance();
        return true;
      }
      if (poll == ParallelMapIterator::Poll::kEnd) {
        slot.it.reset();
        slot.parallel = nullptr;
        Refill(&slot);
      }
    }
    return false;
  }

  const InterleaveNode* node_;
  IteratorContext ctx_;
  std::unique_ptr<Iterator> input_;
  std::vector<Slot> slots_;
  int64_t current_ = 0;
  int64_t taken_ = 0;
  bool started_ = false;
  bool input_exhausted_ = false;
};

std::unique_ptr<Iterator> InterleaveNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<InterleaveIterator>(ctx, this);
}

}  // namespace

NodePtr MakeInterleaveNode(NodePtr input, DatasetFn fn, const InterleaveOptions& options) {
  if (!fn) throw Error(ErrorCode::kInvalidArgument, "interleave: empty function");
  if (options.cycle_length < 1 || options.block_length < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "interleave: cycle_length and block_length must be >= 1",
                {.key = "parallel_reads"});
  }
  if (options.num_parallel_reads < 1 && options.num_parallel_reads != kAutotune) {
    throw Error(ErrorCode::kInvalidArgument, "interleave: num_parallel_reads must be >= 1",
                {.key = "parallel_reads"});
  }
  return std::make_shared<InterleaveNode>(std::move(input), std::move(fn), options);
}

}  // namespace shardflow::pipeline
