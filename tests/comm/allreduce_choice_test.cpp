// kAuto's rule (comm/allreduce.cpp ChooseAlgorithm) on topologies the MPI tests cannot make:
// up to 4096 hosts, several ranks per node, one big node. The thresholds come from the
// simulation (BENCHMARKS.md, "Simulated scaling"); the simulated run of the same rule is
// tests/sim/auto_choice_test.py.
#include <gtest/gtest.h>

#include <cstddef>
#include <utility>

#include "comm/allreduce.hpp"

namespace shardflow::comm {
namespace allreduce_choice_test {

constexpr size_t KiB = 1024;
constexpr size_t MiB = KiB * KiB;

using A = AllreduceAlgorithm;

AllreduceTopology OnePerHost(int hosts) {
  return {.ranks = hosts, .num_nodes = hosts, .max_local_size = 1, .known = true};
}

void Expect(const AllreduceTopology& t, std::initializer_list<std::pair<size_t, A>> want) {
  for (const auto& [bytes, algorithm] : want) {
    EXPECT_STREQ(AlgorithmName(ChooseAlgorithm(t, bytes)), AlgorithmName(algorithm))
        << t.ranks << " ranks on " << t.num_nodes << " nodes, " << bytes << " bytes";
  }
}

TEST(AllreduceChoice, FewHostsPassSmallMessagesToMpiThenRecursiveDoublingThenRabenseifner) {
  for (int hosts : {16, 64, 127}) {
    Expect(OnePerHost(hosts), {{0, A::kMpi},
                               {8 * KiB, A::kMpi},
                               {8 * KiB + 4, A::kRecursiveDoubling},
                               {64 * KiB, A::kRecursiveDoubling},
                               {128 * KiB, A::kMpi},
                               {hosts * 128 * KiB - 4, A::kMpi},
                               {hosts * 128 * KiB, A::kRing}});
  }
}

TEST(AllreduceChoice, From128HostsRecursiveDoublingWhereMpiWouldReduceAndBroadcast) {
  Expect(OnePerHost(128), {{4, A::kRecursiveDoubling},
                           {8 * KiB, A::kRecursiveDoubling},
                           {64 * KiB, A::kRecursiveDoubling},
                           {128 * KiB, A::kRecursiveDoubling},
                           {128 * KiB + 4, A::kMpi},
                           {16 * MiB, A::kRing}});
  Expect(OnePerHost(255), {{128 * KiB, A::kRecursiveDoubling}, {512 * KiB, A::kMpi}});
  for (int hosts : {256, 1024, 4096}) {
    Expect(OnePerHost(hosts), {{4, A::kRecursiveDoubling},
                               {1 * KiB, A::kRecursiveDoubling},
                               {64 * KiB, A::kRecursiveDoubling},
                               {64 * KiB + 4, A::kMpi},
                               {hosts * 128 * KiB, A::kRing}});
  }
}

TEST(AllreduceChoice, WithoutTopologyEveryRankCountsAsAHost) {
  AllreduceTopology t{.ranks = 256, .num_nodes = 256, .known = false};
  Expect(t, {{1 * KiB, A::kRecursiveDoubling}, {1 * MiB, A::kMpi}, {32 * MiB, A::kRing}});
}

TEST(AllreduceChoice, OneNodeUsesSharedMemoryOrMpiWhateverItsSize) {
  AllreduceTopology t{.ranks = 192, .num_nodes = 1, .max_local_size = 192, .known = true};
  Expect(t, {{1 * KiB, A::kShm}, {64 * MiB, A::kShm}});
  t.shm_unavailable = true;
  Expect(t, {{1 * KiB, A::kMpi}, {8 * KiB, A::kMpi}});
}

TEST(AllreduceChoice, SeveralRanksPerNodeHierarchicalBelow256Ranks) {
  for (int nodes : {2, 8, 16, 31, 32, 64, 512}) {
    AllreduceTopology t{.ranks = nodes * 8, .num_nodes = nodes, .max_local_size = 8, .known = true};
    // From 256 ranks MPI's Rabenseifner beats the ring of 32 or more node leaders.
    const A small = t.ranks < 256 ? A::kHierarchical : A::kMpi;
    Expect(t, {{4 * KiB, A::kMpi},
               {16 * KiB, small},
               {64 * KiB, small},
               {nodes * 128 * KiB - 4, A::kMpi},
               {nodes * 128 * KiB, A::kRing}});
    t.nodes_contiguous = false;
    Expect(t, {{4 * KiB, A::kMpi}, {16 * KiB, small}, {1 * MiB, A::kHierarchical}});
  }
}

TEST(AllreduceChoice, TwoRanksUseMpiBelow8MiB) {
  Expect(OnePerHost(2), {{1 * MiB, A::kMpi}, {8 * MiB - 4, A::kMpi}, {8 * MiB, A::kRing}});
}

}  // namespace allreduce_choice_test
}  // namespace shardflow::comm
