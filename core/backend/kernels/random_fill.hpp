// Index kernels of the counter-based random fills and dropout, shared by the CUDA backend and its
// host twin (see kernels/elementwise.hpp). Element i draws the generator of core/random.hpp at
// (seed, stream, counter(i)), so a GPU and the CPU produce the same weights and the same masks.
// counter(i) is i for a whole tensor and the element's index in the whole tensor for a slice
// (SliceIndex, core/backend/backend.hpp).
#pragma once

#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/backend/host_device.hpp"
#include "core/random.hpp"

namespace shardflow::kernels {

// Element e of a slice (outer, size, inner) of a tensor (outer, full, inner) taken at `begin`:
// its index in the whole tensor. A null slice (size 0 and full 0) maps e to itself.
struct Counter {
  bool sliced = false;
  SliceIndex s;
  SF_HOST_DEVICE uint64_t operator()(int64_t e) const {
    if (!sliced) return static_cast<uint64_t>(e);
    const int64_t k = e % s.inner, j = (e / s.inner) % s.size, o = e / (s.inner * s.size);
    return static_cast<uint64_t>((o * s.full + s.begin + j) * s.inner + k);
  }
};

// Inverted dropout: mask = uniform >= rate ? scale : 0, y = x mask. Index: element.
template <typename T>
struct DropoutMaskK {
  Counter counter;
  float rate;
  T scale;
  uint64_t seed, stream;
  const T* x;
  T* mask;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    mask[i] = RandomUniform(seed, stream, counter(i)) >= rate ? scale : T(0);
    y[i] = x[i] * mask[i];
  }
};

// w = stddev * normal (normal = true) or (2 u - 1) limit (normal = false). Index: element.
template <typename T>
struct RandomFillK {
  Counter counter;
  bool normal;
  double scale;  // stddev or limit
  uint64_t seed, stream;
  T* w;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const uint64_t c = counter(i);
    w[i] = normal ? static_cast<T>(scale * RandomNormal(seed, stream, c))
                  : static_cast<T>((2.0 * RandomUniform(seed, stream, c) - 1.0) * scale);
  }
};

}  // namespace shardflow::kernels
