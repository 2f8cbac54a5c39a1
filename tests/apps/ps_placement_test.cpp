// Where parameter servers run (apps/train/strategies/parameter_server/ps_placement.hpp): last, per
// node, a rank list, and the one-line refusals.
#include "apps/train/strategies/parameter_server/ps_placement.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace shardflow::train {
namespace ps_placement_test {

using Ranks = std::vector<int>;

TEST(PsPlacement, LastRanksServe) {
  const PsRoles roles = PlaceParameterServers(5, 2, "last", {});
  EXPECT_EQ(roles.servers, (Ranks{3, 4}));
  EXPECT_EQ(roles.workers, (Ranks{0, 1, 2}));
  EXPECT_EQ(roles.server_index(4), 1);
  EXPECT_EQ(roles.server_index(2), -1);
  EXPECT_EQ(roles.worker_index(2), 2);
  EXPECT_EQ(roles.worker_index(3), -1);
}

TEST(PsPlacement, PerNodeTakesTheHighestRankOfEachNode) {
  // Three nodes of three ranks (node = its lowest rank, as MpiEnvironment gives it).
  const std::vector<int> nodes = {0, 0, 0, 3, 3, 3, 6, 6, 6};
  EXPECT_EQ(PlaceParameterServers(9, 2, "per_node", nodes).servers, (Ranks{2, 5}));
  EXPECT_EQ(PlaceParameterServers(9, 3, "per_node", nodes).servers, (Ranks{2, 5, 8}));
  // More servers than nodes: round-robin, the next-highest rank of each node.
  EXPECT_EQ(PlaceParameterServers(9, 5, "per_node", nodes).servers, (Ranks{1, 2, 4, 5, 8}));
  const PsRoles roles = PlaceParameterServers(9, 3, "per_node", nodes);
  EXPECT_EQ(roles.workers, (Ranks{0, 1, 3, 4, 6, 7}));
}

TEST(PsPlacement, PerNodeNeverMakesRankZeroServe) {
  // Round-robin mapping (--map-by node): node 0 holds ranks 0 and 2, node 1 ranks 1 and 3.
  EXPECT_EQ(PlaceParameterServers(4, 2, "per_node", {0, 1, 0, 1}).servers, (Ranks{2, 3}));
  // A node whose only rank is 0 gets no server.
  EXPECT_EQ(PlaceParameterServers(3, 1, "per_node", {0, 1, 1}).servers, (Ranks{2}));
  // One rank per node (or no node table): the highest ranks first, round by round.
  EXPECT_EQ(PlaceParameterServers(4, 3, "per_node", {}).servers, (Ranks{1, 2, 3}));
}

TEST(PsPlacement, RankListServes) {
  const PsRoles roles = PlaceParameterServers(4, 2, "3,1", {});
  EXPECT_EQ(roles.servers, (Ranks{1, 3}));
  EXPECT_EQ(roles.workers, (Ranks{0, 2}));
  EXPECT_EQ(RolesOf(4, 2, {1, 3}).workers, (Ranks{0, 2}));
  EXPECT_EQ(RolesOf(4, 1, {}).servers, (Ranks{3}));
}

void ExpectRefused(int ranks, int servers, const std::string& placement, const std::string& what) {
  try {
    PlaceParameterServers(ranks, servers, placement, {});
    ADD_FAILURE() << "accepted " << placement;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << placement;
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(PsPlacement, BadPlacementsAreRefusedByName) {
  ExpectRefused(4, 1, "0", "rank 0 is worker 0");
  ExpectRefused(4, 1, "4", "rank 4 is not among the job's 4 ranks");
  ExpectRefused(4, 2, "2,2", "rank 2 is listed twice");
  ExpectRefused(4, 2, "2", "lists 1 rank(s) for dist.ps_ranks = 2");
  ExpectRefused(4, 1, "first", "'first' is neither a rank nor last/per_node");
  ExpectRefused(4, 1, "2,", "'' is neither");
  ExpectRefused(3, 3, "last", "leaves no worker among 3 ranks");
}

// auto takes one-sided windows only where every rank shares a node and has a core: an rma
// server scans, a p2p server sleeps until a message comes.
TEST(PsPlacement, AutoTransportNeedsOneNodeAndACorePerRank) {
  EXPECT_EQ(ResolvePsTransport("auto", {0, 0, 0}, 4), "rma");
  EXPECT_EQ(ResolvePsTransport("auto", {0, 0, 0}, 3), "rma");
  EXPECT_EQ(ResolvePsTransport("auto", {0, 0, 0}, 2), "p2p");  // oversubscribed
  EXPECT_EQ(ResolvePsTransport("auto", {0, 0, 1}, 8), "p2p");  // two nodes
  EXPECT_EQ(ResolvePsTransport("auto", {0, 0, 0}, 0), "rma");  // cores not known
  EXPECT_EQ(ResolvePsTransport("rma", {0, 0, 0}, 2), "rma");   // asked for: as given
  EXPECT_THROW(ResolvePsTransport("shm", {0, 0}, 2), Error);
}

}  // namespace ps_placement_test
}  // namespace shardflow::train
