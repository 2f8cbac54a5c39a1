#include "io/pipeline/counter_rng.hpp"

namespace shardflow::pipeline {

std::array<uint32_t, 4> CounterRng::Philox(std::array<uint32_t, 4> ctr,
                                           std::array<uint32_t, 2> key) {
  // Ten rounds of the Philox4x32 bijection: two 32x32->64 multiplies per round mix the counter,
  // the key is bumped by the Weyl constants between rounds.
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

uint64_t CounterRng::UniformInt(uint64_t n) {
  // n fits in 32 bits for every use here (buffer indices, crop offsets); larger n falls back to
  // modulo of a 64-bit draw, whose bias is below 2^-32 for n < 2^32... and negligible above.
  if (n <= 0xFFFFFFFFull) {
    const uint32_t range = static_cast<uint32_t>(n);
    uint64_t m = static_cast<uint64_t>(NextU32()) * range;
    uint32_t low = static_cast<uint32_t>(m);
    if (low < range) {
      const uint32_t threshold = static_cast<uint32_t>(-range) % range;
      while (low < threshold) {
        m = static_cast<uint64_t>(NextU32()) * range;
        low = static_cast<uint32_t>(m);
      }
    }
    return m >> 32;
  }
  return NextU64() % n;
}

}  // namespace shardflow::pipeline
