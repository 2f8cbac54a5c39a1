// Counter-based random numbers: a value is a pure function of (seed, stream, counter).
//
// Nothing here has state, so a kernel can draw the value for element i on any thread in any
// order and get the same result (design decision 5). Used for weight initialisation (stream =
// parameter index, counter = element index) and dropout masks (stream = step and layer,
// counter = element index). The mixer is SplitMix64's finaliser applied to a combination of the
// three keys; it passes the usual avalanche tests and is far cheaper than a cryptographic hash.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/host_device.hpp"

namespace shardflow {

// 64 random bits for (seed, stream, counter).
// SplitMix64's finaliser.
SF_HOST_DEVICE inline uint64_t RandomMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
SF_HOST_DEVICE inline uint64_t RandomBits(uint64_t seed, uint64_t stream, uint64_t counter) {
  uint64_t h = RandomMix(seed + 0x9e3779b97f4a7c15ULL);
  h = RandomMix(h ^ (stream + 0x632be59bd9b4e019ULL));
  return RandomMix(h ^ (counter * 0x9e3779b97f4a7c15ULL + 0xd1b54a32d192ed03ULL));
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
SF_HOST_DEVICE inline float RandomUniform(uint64_t seed, uint64_t stream, uint64_t counter) {
  return static_cast<float>(RandomBits(seed, stream, counter) >> 40) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller on two independent 32-bit halves, computed in double so the
// result does not depend on the compiler's float contraction choices.
SF_HOST_DEVICE inline double RandomNormal(uint64_t seed, uint64_t stream, uint64_t counter) {
  const uint64_t bits = RandomBits(seed, stream, counter);
  const double u1 = (static_cast<double>(bits >> 32) + 1.0) / 4294967297.0;  // (0, 1)
  const double u2 = static_cast<double>(bits & 0xffffffffULL) / 4294967296.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace shardflow
