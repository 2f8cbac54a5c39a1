#include "core/cpu/vector_math.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

namespace shardflow::cpu {
namespace {

using FloatArray = Eigen::Array<float, Eigen::Dynamic, 1>;
using AlignedMap = Eigen::Map<FloatArray, Eigen::Aligned64>;

// Applies op through an aligned buffer padded to whole packets, so every element takes Eigen's
// packet path: on the caller's arrays Eigen would peel an unaligned head and tail into scalar
// code (libm, other bits), and the results would depend on where the arrays lie.
template <typename Op>
void Apply(int64_t n, const float* x, float* y, const Op& op) {
  constexpr int64_t kChunk = 256, kPacket = 16;
  alignas(64) float buf[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = std::min(kChunk, n - b), padded = (m + kPacket - 1) / kPacket * kPacket;
    std::memcpy(buf, x + b, sizeof(float) * static_cast<size_t>(m));
    std::fill(buf + m, buf + padded, 0.0f);
    AlignedMap v(buf, padded);
    v = op(v);
    std::memcpy(y + b, buf, sizeof(float) * static_cast<size_t>(m));
  }
}

}  // namespace

void TanhFloat(int64_t n, const float* x, float* y) {
  Apply(n, x, y, [](const AlignedMap& v) { return v.tanh(); });
}

void ExpFloat(int64_t n, const float* x, float* y) {
  Apply(n, x, y, [](const AlignedMap& v) { return v.exp(); });
}

}  // namespace shardflow::cpu
