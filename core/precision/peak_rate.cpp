#include "core/precision/peak_rate.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/backend/backend.hpp"

namespace shardflow {

double MeasurePeakGemmRate(Device device, int reps) {
  if (device != Device::kCpu) return 0;
  const int64_t n = kPeakGemmSize;
  // Values of unit size: no denormals, no overflow, whatever the precision rounds to.
  std::vector<float> a(static_cast<size_t>(n * n), 0.5f), b(a.size(), 0.25f), c(a.size());
  Backend<float>& backend = BackendFor<float>(device);
  double best = 0;
  for (int r = 0; r <= std::max(reps, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    backend.Gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0 && s > 0) best = std::max(best, 2.0 * static_cast<double>(n * n * n) / s / 1e9);
  }
  return best;
}

}  // namespace shardflow
