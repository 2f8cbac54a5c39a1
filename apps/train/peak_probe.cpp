#include "apps/train/peak_probe.hpp"

#include "comm/collectives.hpp"
#include "core/precision/peak_rate.hpp"

namespace shardflow::train {

double JobPeakGemmRate(comm::Communicator& job, const std::string& mode, double wall_s,
                       bool whole_model_on_cpu) {
  if (mode == "off" || (mode == "auto" && wall_s < kPeakProbeMinWallSeconds)) return 0;
  const int64_t all = comm::AllreduceInt64(job, whole_model_on_cpu ? 1 : 0, comm::ReduceOp::kMin);
  if (all == 0) return 0;
  const double mine = MeasurePeakGemmRate(Device::kCpu);
  return comm::AllreduceDouble(job, mine, comm::ReduceOp::kSum);
}

}  // namespace shardflow::train
