// train.peak_probe: the job's measured peak for its precision, for the report's fraction of peak
// (RunSummary::peak_gflops_per_s). Every rank measures MeasurePeakGemmRate
// (core/precision/peak_rate.hpp) at the same time, with the run's intra-op threads, so ranks
// sharing a node share its cores as they did while training; the job's peak is the sum.
// Collective over `job`: every rank calls it with the same mode and wall.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "core/tensor.hpp"

namespace shardflow::train {

// Seconds of training from which `auto` measures (the probe then costs about 1% of the run).
inline constexpr double kPeakProbeMinWallSeconds = 10;

// The job's peak in GFLOP/s, or 0 when `mode` (auto | on | off) says not to, or when a rank has
// no whole model on the CPU (a model split over ranks or on a GPU: no figure yet).
double JobPeakGemmRate(comm::Communicator& job, const std::string& mode, double wall_s,
                       bool whole_model_on_cpu);

}  // namespace shardflow::train
