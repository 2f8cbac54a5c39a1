// Pipeline schedules and stage splits: the arithmetic of model parallelism, without MPI.
//
// A step of a pipeline of S stages runs M micro-batches through every stage, forward then
// backward. StageOps lists, for one stage, the order of its passes:
//   GPipe  F0 F1 ... F(M-1) B0 B1 ... B(M-1): every micro-batch's activations are kept until
//          the backward passes start (M in flight).
//   1F1B   stage s runs w = min(S - 1 - s, M) forwards, then alternates one forward and one
//          backward, then the w remaining backwards: at most S - s micro-batches in flight,
//          the same bubble as GPipe, (S - 1) / (M + S - 1) of the step with equal stages.
// Backward passes run in micro-batch order on every stage, so each stage accumulates its
// gradients in the same order whatever the schedule.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::apps {

enum class PipelineSchedule { kGPipe, k1F1B };

// "gpipe" | "1f1b"; Error(kInvalidArgument) naming dist.schedule otherwise.
PipelineSchedule ParsePipelineSchedule(const std::string& name);
const char* PipelineScheduleName(PipelineSchedule schedule);

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  bool operator==(const PipelineOp&) const = default;
};

// The passes of `stage` (0-based) of `stages`, for `micro_batches` micro-batches.
std::vector<PipelineOp> StageOps(PipelineSchedule schedule, int stages, int stage,
                                 int micro_batches);

// The bubble of an ideal pipeline with equal stages: (S - 1) / (M + S - 1).
double IdealBubbleFraction(int stages, int micro_batches);

// Rows of each of `parts` micro-batches of a batch of `rows`: as equal as possible, the larger
// first (rows < parts leaves empty micro-batches at the end).
std::vector<int64_t> MicroBatchRows(int64_t rows, int parts);

// What a stage split needs to know about each layer of the whole model.
struct LayerCost {
  std::string name;        // "03_dense"
  double flops = 0;        // forward FLOPs per sample
  int64_t parameters = 0;  // 0: the layer holds none
};

// The first layer of stages 1..S-1 that minimises the largest stage's FLOPs, every stage
// holding at least one layer with parameters (a stage without any would only pass activations
// on). Throws Error(kInvalidArgument), key dist.pipeline_stages, when the model has fewer
// layers with parameters than stages.
std::vector<int> BalanceStages(const std::vector<LayerCost>& layers, int stages);

// Checks user boundaries (dist.stage_boundaries): S - 1 strictly increasing indices in
// (0, layers), each stage holding a layer with parameters. Throws Error(kInvalidArgument),
// key dist.stage_boundaries, naming the offending value.
void CheckStageBoundaries(const std::vector<int>& boundaries, const std::vector<LayerCost>& layers,
                          int stages);

// "stage 0: layers 0-1 (00_flatten..01_dense, 0.80 MFLOP/sample), stage 1: ...".
std::string DescribeStages(const std::vector<int>& boundaries,
                           const std::vector<LayerCost>& layers);

}  // namespace shardflow::apps
