// Gradient clipping by global norm (over the whole flat gradient arena).
#pragma once

#include <cstdint>

namespace shardflow {

// sqrt(sum g^2), accumulated in double.
double GlobalNorm(const float* g, int64_t n);

// If the global norm exceeds max_norm (> 0), scales g by max_norm / norm. Returns the norm
// before clipping (report it; a NaN norm leaves g unchanged so the caller can detect it).
double ClipByGlobalNorm(float* g, int64_t n, double max_norm);

}  // namespace shardflow
