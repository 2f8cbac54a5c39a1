#include "apps/train/run_trace.hpp"

#include "comm/clock_sync.hpp"
#include "comm/collectives.hpp"
#include "core/logging.hpp"
#include "io/pipeline/stage_stats.hpp"

namespace shardflow::train {

RunTrace::RunTrace(comm::Communicator& ctl, bool on, std::string output_dir)
    : ctl_(ctl), on_(on), output_dir_(std::move(output_dir)) {
  if (!on_) return;
  SetTraceThreadName("training loop");
  StartTracing();
  Sample();
}

void RunTrace::Sample() {
  const comm::ClockSample c = comm::MeasureClockOffset(ctl_);
  clock_.push_back({.local_ns = c.local_ns, .offset_ns = c.offset_ns, .error_ns = c.error_ns});
}

void RunTrace::Finish() {
  if (!on_ || output_dir_.empty()) return;
  StopTracing();
  Sample();
  const std::string path = output_dir_ + "/trace.json";
  WriteTrace(RankTracePath(path, ctl_.rank()), {.pid = ctl_.rank(), .clock_samples = clock_});
  comm::Barrier(ctl_);  // every rank's file is written
  if (ctl_.rank() != 0) return;
  std::vector<std::string> ranks;
  for (int r = 0; r < ctl_.size(); ++r) ranks.push_back(RankTracePath(path, r));
  MergeTraceFiles(ranks, path);
  SF_LOG(Info) << "trace: " << path
               << " (every rank on rank 0's clock; ui.perfetto.dev or chrome://tracing)";
}

void TraceInputQueues(const pipeline::PipelineStats& stats) {
  if (!TracingEnabled()) return;
  for (const pipeline::StageSnapshot& stage : stats.Snapshot()) {
    TraceCounter(InternTraceName("queue ", stage.name),
                 static_cast<double>(stage.buffered_elements));
  }
}

}  // namespace shardflow::train
