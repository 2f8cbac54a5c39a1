#include "core/optim/clip.hpp"

#include <cmath>

namespace shardflow {

double GlobalNorm(const float* g, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * g[i];
  return std::sqrt(s);
}

double ClipByGlobalNorm(float* g, int64_t n, double max_norm) {
  const double norm = GlobalNorm(g, n);
  if (max_norm > 0.0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / norm);
    for (int64_t i = 0; i < n; ++i) g[i] *= scale;
  }
  return norm;
}

}  // namespace shardflow
