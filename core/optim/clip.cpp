#include "core/optim/clip.hpp"

#include <cmath>

#include "core/backend/backend.hpp"

namespace shardflow {

// g is host memory (the gradient arena); its backend is the CPU's.
double GlobalNorm(const float* g, int64_t n) {
  return std::sqrt(BackendFor<float>(Device::kCpu).SumSquares(n, g));
}

double ClipByGlobalNorm(float* g, int64_t n, double max_norm) {
  const double norm = GlobalNorm(g, n);
  if (max_norm > 0.0 && norm > max_norm) {
    BackendFor<float>(Device::kCpu).Scale(n, static_cast<float>(max_norm / norm), g);
  }
  return norm;
}

}  // namespace shardflow
