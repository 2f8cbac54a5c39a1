// prefetch(n): one background thread reads up to n elements ahead of the consumer, so input
// work overlaps the consumer's compute (step time -> max(input, compute)). kAutotune starts at
// 2 and lets the autotuner grow the depth while the consumer starves, within the RAM budget.
#include "io/pipeline/autotune.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/parallel_map.hpp"

namespace shardflow::pipeline {
namespace {

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int64_t buffer, int64_t max_bytes)
      : input_(std::move(input)), buffer_(buffer), max_bytes_(max_bytes) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    ParallelConfig config;
    config.stage_name = "prefetch";
    config.max_workers = 1;
    config.initial_workers = 1;
    // The worker holds one element in flight besides the n ready ones.
    config.capacity = (buffer_ == kAutotune ? 2 : buffer_) + 1;
    config.max_bytes = max_bytes_;
    config.deterministic = true;
    auto it =
        std::make_unique<ParallelMapIterator>(ctx, input_->MakeIterator(ctx), MapFn(), config);
    if (buffer_ == kAutotune && ctx.autotuner) {
      return ctx.autotuner->Manage(std::move(it), Autotuner::Knob::kBufferDepth);
    }
    return it;
  }
  std::string Describe() const override { return input_->Describe(); }  // does not change data
  int64_t Cardinality() const override { return input_->Cardinality(); }

 private:
  NodePtr input_;
  int64_t buffer_, max_bytes_;
};

}  // namespace

NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_size, int64_t max_bytes) {
  if (buffer_size < 1 && buffer_size != kAutotune) {
    throw Error(ErrorCode::kInvalidArgument,
                "prefetch: buffer must be >= 1 or kAutotune, got " + std::to_string(buffer_size),
                {.key = "prefetch"});
  }
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size, max_bytes);
}

}  // namespace shardflow::pipeline
