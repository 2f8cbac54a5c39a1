// The intra-op pool (core/cpu/parallel.hpp): every piece runs exactly once, ParallelFor covers
// its range with disjoint pieces, and concurrent callers (serve replicas) each get correct
// results, with the pool's two threads or inline.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/parallel.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace parallel_test {

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = cpu::IntraOpThreads();
    cpu::SetIntraOpThreads(2);
  }
  void TearDown() override { cpu::SetIntraOpThreads(before_); }
  int before_ = 1;
};

TEST_F(PoolTest, EveryPieceRunsOnce) {
  for (const int64_t pieces : {1, 2, 3, 8, 97}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(pieces));
    cpu::RunPieces(pieces, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < pieces; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
  }
}

TEST_F(PoolTest, ParallelForCoversTheRangeOnce) {
  for (const int64_t n : {1, 5, 64, 1000, 4097}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    cpu::ParallelFor(n, 7, [&](int64_t b, int64_t e) {
      ASSERT_LT(b, e);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  }
}

// Two threads calling Gemm at once: one uses the workers, the other runs inline; both get the
// bits of a one-thread run (the blocks do not depend on who runs them).
TEST_F(PoolTest, ConcurrentCallersGetTheOneThreadResult) {
  const int64_t m = 192, n = 160, k = 96;
  std::vector<float> a(m * k), b(k * n), ref(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(RandomNormal(1, 0, i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(RandomNormal(2, 0, i));
  cpu::SetIntraOpThreads(1);
  cpu::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, ref.data(), n);
  cpu::SetIntraOpThreads(2);
  std::atomic<int> mismatches{0};
  auto caller = [&] {
    std::vector<float> c(m * n);
    for (int rep = 0; rep < 30; ++rep) {
      cpu::Gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      if (std::memcmp(c.data(), ref.data(), c.size() * sizeof(float)) != 0) ++mismatches;
    }
  };
  std::thread t1(caller), t2(caller);
  t1.join();
  t2.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace parallel_test
}  // namespace shardflow
