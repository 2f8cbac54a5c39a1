// The batch buffers' block pool: big tensors reuse freed blocks of their size (not zero-filled),
// small ones come from the heap zero-filled, the pool keeps at most kPooledBytesKept, and
// threads may take and free blocks at once.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "io/pipeline/block_pool.hpp"

namespace shardflow::pipeline {
namespace block_pool_test {

TEST(BlockPool, BigTensorsReuseAFreedBlockOfTheirSize) {
  const Shape shape{3, 1000, 117};  // 1.4 MB of float32: a size no other test uses
  const int64_t before = PooledBytesKept();
  const void* first = nullptr;
  {
    Tensor t = PooledTensor(DType::kFloat32, shape);
    ASSERT_EQ(t.shape(), shape);
    first = t.raw_data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    std::memset(t.raw_data(), 0x5A, t.byte_size());
  }
  const int64_t bytes = (3 * 1000 * 117 * 4 + 63) / 64 * 64;
  EXPECT_EQ(PooledBytesKept(), before + bytes);
  Tensor again = PooledTensor(DType::kFloat32, shape);
  EXPECT_EQ(again.raw_data(), first);  // the freed block, as the last user left it
  EXPECT_EQ(static_cast<const unsigned char*>(again.raw_data())[again.byte_size() - 1], 0x5A);
  EXPECT_EQ(PooledBytesKept(), before);
  // A view keeps the block: it returns when the last user goes.
  Tensor rows = again.Slice(0, 1);
  again = Tensor();
  EXPECT_EQ(PooledBytesKept(), before);
  rows = Tensor();
  EXPECT_EQ(PooledBytesKept(), before + bytes);
}

TEST(BlockPool, SmallTensorsAreZeroFilledAndThePoolIsBounded) {
  const Tensor small = PooledTensor(DType::kUInt8, {1000});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(small.data<uint8_t>()[i], 0);
  {
    std::vector<Tensor> many;
    for (int64_t i = 0; i < kPooledBytesKept / (8 << 20) + 3; ++i) {
      many.push_back(PooledTensor(DType::kUInt8, {(8 << 20) + 64 * 5}));
    }
  }
  EXPECT_LE(PooledBytesKept(), kPooledBytesKept);
  EXPECT_GT(PooledBytesKept(), 0);
  ReleasePooledBlocks();
  EXPECT_EQ(PooledBytesKept(), 0);
  EXPECT_THROW(PooledTensor(DType::kFloat32, {-1, 1 << 20}), Error);
  EXPECT_THROW(PooledTensor(DType::kFloat32, {-1024, -1024}), Error);  // 4 MB "elements"
}

TEST(BlockPool, ThreadsTakeAndFreeBlocksAtOnce) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        Tensor a = PooledTensor(DType::kUInt8, {(1 << 20) + 64 * (i % 3)});
        static_cast<unsigned char*>(a.raw_data())[0] = static_cast<unsigned char>(t);
        Tensor b = PooledTensor(DType::kUInt8, {(1 << 20) + 64 * (i % 2)});
        static_cast<unsigned char*>(b.raw_data())[b.byte_size() - 1] = 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(PooledBytesKept(), kPooledBytesKept);
}

}  // namespace block_pool_test
}  // namespace shardflow::pipeline
