// map(fn): on the consumer's thread (num_parallel_calls = 0) or on worker threads through
// ParallelMapIterator (n workers, or kAutotune: up to the CPU budget, tuned from measured rates).
#include <algorithm>
#include <thread>

#include "io/pipeline/autotune.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/parallel_map.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

class MapNode : public DatasetNode {
 public:
  MapNode(NodePtr input, MapFn fn, const MapOptions& options)
      : input_(std::move(input)), fn_(std::move(fn)), options_(options) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    // Parallelism and determinism flags do not change the (deterministic) output.
    return "map(" + options_.name + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override { return input_->Cardinality(); }
  NodePtr input_;
  MapFn fn_;
  MapOptions options_;
};

class MapIterator : public SequentialIterator {
 public:
  MapIterator(const IteratorContext& ctx, const MapNode* node)
      : SequentialIterator(ctx, node->options_.name),
        node_(node),
        input_(node->input_->MakeIterator(ctx)) {
    map_ctx_.epoch = ctx.epoch;
  }
  bool NextImpl(Element* out) override {
    if (!Pull(input_.get(), out)) return false;
    try {
      node_->fn_(*out, map_ctx_);
    } catch (...) {
      RethrowInStage(node_->options_.name, &out->where);
    }
    return true;
  }
  void Save(StateWriter* w) override {
    w->WriteTag("map");
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("map");
    input_->Restore(r);
  }

 private:
  const MapNode* node_;
  std::unique_ptr<Iterator> input_;
  MapContext map_ctx_;
};

std::unique_ptr<Iterator> MapNode::MakeIterator(const IteratorContext& ctx) const {
  if (options_.num_parallel_calls == 0) return std::make_unique<MapIterator>(ctx, this);
  const bool tuned = options_.num_parallel_calls == kAutotune;
  ParallelConfig config;
  config.stage_name = options_.name;
  config.max_workers = tuned ? DefaultCpuBudget() : options_.num_parallel_calls;
  config.initial_workers = tuned ? 1 : options_.num_parallel_calls;
  // Default: 8 elements per worker, so each worker can run rounds of 4 (see parallel_map.hpp).
  config.capacity = options_.max_buffered_elements > 0 ? options_.max_buffered_elements
                                                       : 8 * int64_t{config.max_workers} + 2;
  config.max_bytes = options_.max_buffered_bytes;
  config.deterministic = options_.deterministic;
  auto it = std::make_unique<ParallelMapIterator>(ctx, input_->MakeIterator(ctx), fn_, config);
  if (tuned && ctx.autotuner) {
    return ctx.autotuner->Manage(std::move(it), Autotuner::Knob::kParallelism);
  }
  return it;
}

}  // namespace

NodePtr MakeMapNode(NodePtr input, MapFn fn, const MapOptions& options) {
  if (!fn) throw Error(ErrorCode::kInvalidArgument, "map: empty function", {.key = options.name});
  if (options.num_parallel_calls < kAutotune) {
    throw Error(ErrorCode::kInvalidArgument,
                "map: num_parallel_calls must be >= 0 or kAutotune (-1), got " +
                    std::to_string(options.num_parallel_calls),
                {.key = "parallel_calls"});
  }
  return std::make_shared<MapNode>(std::move(input), std::move(fn), options);
}

}  // namespace shardflow::pipeline
