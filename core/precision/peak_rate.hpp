// The machine's peak for the run's precision, measured rather than looked up: the rate of the
// device's installed GEMM (the precision's, as the layers call it: core/precision/precision.hpp)
// on a large square product. A clock-and-ISA formula misleads on a guest whose clock the
// hypervisor decides, and where instructions do not run at the rate a table gives (the
// development machine's AVX512-BF16 products, counted at twice the float rate by such a table,
// measured half of it); the best library rate is what a step can reach, so the report's
// "fraction of peak" (core/run_report.hpp) divides by this.
// Thread-safety: call from one thread; uses the intra-op pool as any GEMM does.
#pragma once

#include <cstdint>

#include "core/tensor.hpp"  // Device

namespace shardflow {

inline constexpr int64_t kPeakGemmSize = 1024;

// GFLOP/s of BackendFor<float>(device).Gemm on kPeakGemmSize^3: the best of `reps` calls after
// one warm-up call (about 0.1 s on one core in bf16). 0 for a device other than the CPU (a GPU
// run reports no fraction of peak yet).
double MeasurePeakGemmRate(Device device, int reps = 3);

}  // namespace shardflow
