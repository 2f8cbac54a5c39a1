// CounterRng: a counter-based random generator (Philox4x32-10, Salmon et al., SC'11).
//
// The output is a pure function of (key, counter): here key = seed and the counter holds
// (epoch, element id, stream). So a random draw for element 17 of epoch 3 is the same no matter
// which thread computes it or when — the basis of decision 5 (determinism). Within one
// (seed, epoch, element, stream) a generator yields a sequence by bumping the low counter word.
// Thread-safety: a CounterRng is a value; use one per thread/element.
#pragma once

#include <array>
#include <cstdint>

namespace shardflow::pipeline {

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t epoch, uint64_t element, uint32_t stream = 0)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
        counter_{0, stream, static_cast<uint32_t>(element) ^ static_cast<uint32_t>(epoch << 20),
                 static_cast<uint32_t>(element >> 32) ^ static_cast<uint32_t>(epoch >> 12) ^
                     (static_cast<uint32_t>(epoch) * 0x9E3779B9u)} {}

  uint32_t NextU32() {
    if (used_ == 4) Refill();
    return block_[used_++];
  }
  uint64_t NextU64() {
    uint64_t hi = NextU32();
    return (hi << 32) | NextU32();
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n). REQUIRES: n > 0. Lemire's multiply-shift with rejection.
  uint64_t UniformInt(uint64_t n);

  // The raw block function, exposed for tests against published vectors.
  static std::array<uint32_t, 4> Philox(std::array<uint32_t, 4> counter,
                                        std::array<uint32_t, 2> key);

 private:
  void Refill() {
    block_ = Philox(counter_, key_);
    ++counter_[0];
    used_ = 0;
  }
  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 4> counter_;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
};

}  // namespace shardflow::pipeline
