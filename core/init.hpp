// Weight initialisation, seeded and identical on every rank.
//
// Element i of a parameter is a pure function of (seed, stream, i) (core/random.hpp), so every
// rank that builds the same model with the same seed gets bit-identical weights without a
// broadcast, whatever the thread count. `stream` is the parameter id in the arena.
#pragma once

#include <cstdint>
#include <string>

#include "core/backend/backend.hpp"

namespace shardflow {

enum class InitKind {
  kHeNormal,       // N(0, 2 / fan_in): for layers followed by ReLU (default)
  kGlorotUniform,  // U(-l, l), l = sqrt(6 / (fan_in + fan_out)): tanh/sigmoid/linear layers
};

// "he" | "glorot"; throws Error(kInvalidArgument).
InitKind ParseInitKind(const std::string& name);
const char* InitKindName(InitKind kind);

// Fills w[0, n) for a kernel with the given fans. REQUIRES: fan_in, fan_out > 0.
template <typename T>
void InitKernel(InitKind kind, T* w, int64_t n, int64_t fan_in, int64_t fan_out, uint64_t seed,
                uint64_t stream);

// Fills a slice (core/backend/backend.hpp SliceIndex) of a kernel with the given fans (those of
// the whole kernel): exactly the values InitKernel gives the whole kernel at the slice's indices,
// without materialising the whole kernel (tensor parallelism).
template <typename T>
void InitKernelSlice(InitKind kind, T* w, const SliceIndex& slice, int64_t fan_in, int64_t fan_out,
                     uint64_t seed, uint64_t stream);

// Fills w[0, n) with `value`.
template <typename T>
void InitConstant(T* w, int64_t n, T value);

}  // namespace shardflow
