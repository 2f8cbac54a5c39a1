// FNV-1a, 64 bits: the project's one non-cryptographic string hash (description hashes of
// pipeline states, run identities, the out-of-vocabulary buckets of word lookups). `h` continues
// a hash over several pieces: Fnv1a64(b, Fnv1a64(a)) == Fnv1a64(a + b).
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardflow {

inline constexpr uint64_t kFnv1a64Offset = 14695981039346656037ULL;

constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64Offset) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace shardflow
