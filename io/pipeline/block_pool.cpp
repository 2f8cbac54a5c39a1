#include "io/pipeline/block_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::pipeline {
namespace {

class BlockPool {
 public:
  // A block of `bytes` (a multiple of 64), 64-byte aligned, released into the pool.
  std::shared_ptr<void> Acquire(size_t bytes) EXCLUDES(mu_) {
    void* block = nullptr;
    {
      MutexLock lock(mu_);
      const auto it = free_.find(bytes);
      if (it != free_.end()) {
        block = it->second;
        free_.erase(it);
        kept_ -= bytes;
      }
    }
    if (block == nullptr) block = std::aligned_alloc(64, bytes);
    if (block == nullptr) {
      throw Error(ErrorCode::kInternal,
                  "out of memory allocating " + std::to_string(bytes) + " bytes for a batch");
    }
    return std::shared_ptr<void>(block, [this, bytes](void* p) { Release(p, bytes); });
  }

  void ReleaseAll() EXCLUDES(mu_) {
    std::multimap<size_t, void*> blocks;
    {
      MutexLock lock(mu_);
      blocks.swap(free_);
      kept_ = 0;
    }
    for (const auto& [bytes, block] : blocks) std::free(block);
  }

  int64_t kept() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return static_cast<int64_t>(kept_);
  }

 private:
  void Release(void* block, size_t bytes) EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      if (kept_ + bytes <= static_cast<size_t>(kPooledBytesKept)) {
        free_.emplace(bytes, block);
        kept_ += bytes;
        return;
      }
    }
    std::free(block);
  }

  Mutex mu_;
  std::multimap<size_t, void*> free_ GUARDED_BY(mu_);  // by byte size
  size_t kept_ GUARDED_BY(mu_) = 0;
};

// Never destroyed: a batch may outlive static destruction (its deleter runs at exit).
BlockPool& Pool() {
  static BlockPool* pool = new BlockPool;
  return *pool;
}

}  // namespace

Tensor PooledTensor(DType dtype, const Shape& shape) {
  // A negative dimension goes to Tensor's constructor, which refuses it (two of them would
  // make a positive element count).
  const bool negative = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  const auto bytes = NumElements(shape) * static_cast<int64_t>(DTypeSize(dtype));
  if (negative || bytes < kPooledMinBytes) return Tensor(dtype, shape);
  const size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  std::shared_ptr<void> block = Pool().Acquire(rounded);
  void* data = block.get();
  return Tensor::Adopt(std::move(block), data, dtype, shape);
}

int64_t PooledBytesKept() { return Pool().kept(); }

void ReleasePooledBlocks() { Pool().ReleaseAll(); }

}  // namespace shardflow::pipeline
