#include "core/cpu/bf16_round.hpp"

#include <cstring>

namespace shardflow::bf16 {
namespace {

// Branch-free, so RoundRows' loop vectorises (8 floats per AVX2 instruction).
inline uint16_t Round(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t nan = static_cast<uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // ties to even; may overflow
  const uint32_t quiet = (u >> 16) | 0x40u;                         // a NaN stays a (quiet) NaN
  return static_cast<uint16_t>(nan ? quiet : rounded);
}

}  // namespace

uint16_t FromFloat(float x) { return Round(x); }

float ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

void RoundRows(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * ld;
    uint16_t* o = out + i * cols;
    for (int64_t j = 0; j < cols; ++j) o[j] = Round(row[j]);
  }
}

}  // namespace shardflow::bf16
