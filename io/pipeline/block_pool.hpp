// Recycled memory for batch buffers. A batch of 64 ImageNet crops (224x224x3 float32) is
// 38.5 MB: glibc maps a block that large afresh on every allocation (it is above the 32 MB
// ceiling of its mmap threshold), and the kernel zero-fills each page on first touch. perf put
// those page faults and that zeroing at 8% of the image pipeline's time on one core. A block
// its last user frees (the trainer dropping a batch) is kept for the next tensor of the same
// byte size, up to kPooledBytesKept in all; tensors under kPooledMinBytes come from the heap as
// before.
// Thread-safety: PooledTensor and the blocks' release run on any thread (a mutex).
#pragma once

#include <cstdint>

#include "core/tensor.hpp"

namespace shardflow::pipeline {

inline constexpr int64_t kPooledMinBytes = int64_t{1} << 20;
inline constexpr int64_t kPooledBytesKept = int64_t{256} << 20;

// A CPU tensor whose bytes are NOT zero-filled (a recycled block holds an earlier batch's): the
// caller writes every byte it hands on. Under kPooledMinBytes: Tensor(dtype, shape).
Tensor PooledTensor(DType dtype, const Shape& shape);

// Bytes of free blocks the pool keeps now (tests, benchmarks).
int64_t PooledBytesKept();

// Frees every block the pool keeps (benchmarks: each contender starts cold).
void ReleasePooledBlocks();

}  // namespace shardflow::pipeline
