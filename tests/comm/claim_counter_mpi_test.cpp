// comm::ClaimCounter on 1..4 ranks: indices handed out without gaps and each exactly once when
// every rank claims as fast as it can (one rank from two threads at once), from a start value;
// a lowered fence is seen by every later claim, and never raised again.
#include "comm/claim_counter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {
namespace {

// Every rank claims until the index passes `last`; the claims gathered on every rank, sorted.
std::vector<int64_t> ClaimAll(Communicator& comm, const ClaimCounter& counter, int64_t last,
                              int threads) {
  std::vector<std::vector<int64_t>> mine(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int64_t c = counter.Next().index; c <= last; c = counter.Next().index) {
        mine[static_cast<size_t>(t)].push_back(c);
      }
    });
  }
  for (auto& t : pool) t.join();
  std::vector<int64_t> flat;
  for (const auto& v : mine) flat.insert(flat.end(), v.begin(), v.end());
  std::vector<int64_t> all = GatherConcat(comm, flat.data(), flat.size());
  int64_t n = static_cast<int64_t>(all.size());
  BroadcastBytes(comm, &n, sizeof(n));
  all.resize(static_cast<size_t>(n));
  BroadcastBytes(comm, all.data(), all.size() * sizeof(int64_t));
  std::sort(all.begin(), all.end());
  return all;
}

TEST(ClaimCounterTest, EveryIndexOnceFromTheStart) {
  Communicator comm(Group::kWorld);
  for (const int64_t start : {int64_t{0}, int64_t{17}}) {
    const ClaimCounter counter(comm, comm.size() - 1, start);
    const std::vector<int64_t> all = ClaimAll(comm, counter, start + 499, comm.rank() == 0 ? 2 : 1);
    ASSERT_EQ(all.size(), 500u);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], start + static_cast<int64_t>(i));
  }
}

TEST(ClaimCounterTest, LoweredFenceIsSeenAndKept) {
  Communicator comm(Group::kWorld);
  const ClaimCounter counter(comm, 0, 0);
  EXPECT_EQ(counter.Peek().fence, ClaimCounter::kNoFence);
  Barrier(comm);
  if (comm.rank() == comm.size() - 1) {
    for (int i = 0; i < 5; ++i) counter.Next();
    counter.LowerFence(counter.Peek().index);  // 5
    counter.LowerFence(40);                    // never raised
  }
  Barrier(comm);
  const ClaimCounter::Claim c = counter.Next();
  EXPECT_GE(c.index, 5);
  EXPECT_EQ(c.fence, 5);
  Barrier(comm);
  EXPECT_EQ(counter.Peek().index, 5 + comm.size());
}

}  // namespace
}  // namespace shardflow::comm
