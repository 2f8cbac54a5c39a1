// A float32 tensor of counter-based uniform values in [-1, 1), for the core unit tests: the
// same (seed, stream) gives the same values on every run and machine.
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "core/random.hpp"
#include "core/tensor.hpp"

namespace shardflow::testing {

inline Tensor RandomTensor(const Shape& shape, uint64_t seed, uint64_t stream) {
  Tensor t(DType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    p[i] = 2.0f * RandomUniform(seed, stream, static_cast<uint64_t>(i)) - 1.0f;
  }
  return t;
}

}  // namespace shardflow::testing
