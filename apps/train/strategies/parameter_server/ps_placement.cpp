#include "apps/train/strategies/parameter_server/ps_placement.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace shardflow::train {
namespace {

Error PlacementError(const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, what,
               {.key = "dist.ps_placement",
                .hint = "last, per_node, or a comma-separated list of dist.ps_ranks ranks"});
}

std::vector<int> ParseRankList(int ranks, int servers, const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    int rank = -1;
    try {
      rank = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) {
      throw PlacementError("dist.ps_placement '" + text + "': '" + item +
                           "' is neither a rank nor last/per_node");
    }
    if (rank < 0 || rank >= ranks) {
      throw PlacementError("dist.ps_placement: rank " + item + " is not among the job's " +
                           std::to_string(ranks) + " ranks");
    }
    if (rank == 0) {
      throw PlacementError("dist.ps_placement: rank 0 is worker 0, the chief, and cannot serve");
    }
    if (std::find(out.begin(), out.end(), rank) != out.end()) {
      throw PlacementError("dist.ps_placement: rank " + item + " is listed twice");
    }
    out.push_back(rank);
    pos = comma + 1;
  }
  if (static_cast<int>(out.size()) != servers) {
    throw PlacementError("dist.ps_placement lists " + std::to_string(out.size()) +
                         " rank(s) for dist.ps_ranks = " + std::to_string(servers));
  }
  return out;
}

// Round r takes the r-th highest rank of every node (nodes in the order of their lowest rank).
std::vector<int> PerNode(int ranks, int servers, const std::vector<int>& node_of_rank) {
  std::map<int, std::vector<int>> by_node;  // node -> its ranks, highest first, rank 0 left out
  std::vector<int> order;                   // nodes by their lowest rank
  for (int r = 0; r < ranks; ++r) {
    const int node = node_of_rank.empty() ? r : node_of_rank[static_cast<size_t>(r)];
    if (std::find(order.begin(), order.end(), node) == order.end()) order.push_back(node);
    if (r != 0) by_node[node].insert(by_node[node].begin(), r);
  }
  std::vector<int> out;
  for (size_t round = 0; static_cast<int>(out.size()) < servers; ++round) {
    for (int node : order) {
      const std::vector<int>& candidates = by_node[node];
      if (round < candidates.size() && static_cast<int>(out.size()) < servers) {
        out.push_back(candidates[round]);
      }
    }
  }
  return out;
}

}  // namespace

int PsRoles::server_index(int rank) const {
  const auto it = std::find(servers.begin(), servers.end(), rank);
  return it == servers.end() ? -1 : static_cast<int>(it - servers.begin());
}

int PsRoles::worker_index(int rank) const {
  const auto it = std::lower_bound(workers.begin(), workers.end(), rank);
  return it == workers.end() || *it != rank ? -1 : static_cast<int>(it - workers.begin());
}

PsRoles RolesOf(int ranks, int count, const std::vector<int>& servers) {
  if (servers.empty()) return PlaceParameterServers(ranks, count, "last", {});
  return PlaceParameterServers(ranks, count, RankList(servers), {});
}

std::string ResolvePsTransport(const std::string& choice, const std::vector<int>& node_of_rank,
                               int cores) {
  if (choice == "p2p" || choice == "rma") return choice;
  if (choice != "auto") {
    throw Error(ErrorCode::kInvalidArgument, "dist.ps_transport '" + choice + "' is unknown",
                {.key = "dist.ps_transport", .hint = "auto, p2p or rma"});
  }
  const bool one_node = std::all_of(node_of_rank.begin(), node_of_rank.end(),
                                    [&](int node) { return node == node_of_rank.front(); });
  // A server that scans its windows needs a core of its own; a p2p server sleeps until a message
  // comes (docs/design.md decision 38).
  const bool fits = cores <= 0 || static_cast<int>(node_of_rank.size()) <= cores;
  return one_node && fits ? "rma" : "p2p";
}

std::string RankList(const std::vector<int>& ranks) {
  std::string list;
  for (int r : ranks) {
    if (!list.empty()) list.push_back(',');
    list.append(std::to_string(r));
  }
  return list;
}

PsRoles PlaceParameterServers(int ranks, int servers, const std::string& placement,
                              const std::vector<int>& node_of_rank) {
  if (servers < 1 || servers >= ranks) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.ps_ranks " + std::to_string(servers) + " leaves no worker among " +
                    std::to_string(ranks) + " ranks",
                {.key = "dist.ps_ranks", .hint = "run more ranks than parameter servers"});
  }
  if (!node_of_rank.empty() && static_cast<int>(node_of_rank.size()) != ranks) {
    throw Error(ErrorCode::kInternal, "node table of " + std::to_string(node_of_rank.size()) +
                                          " ranks for a job of " + std::to_string(ranks));
  }
  PsRoles roles;
  if (placement == "last") {
    for (int r = ranks - servers; r < ranks; ++r) roles.servers.push_back(r);
  } else if (placement == "per_node") {
    roles.servers = PerNode(ranks, servers, node_of_rank);
  } else {
    roles.servers = ParseRankList(ranks, servers, placement);
  }
  std::sort(roles.servers.begin(), roles.servers.end());
  for (int r = 0; r < ranks; ++r) {
    if (!std::binary_search(roles.servers.begin(), roles.servers.end(), r)) {
      roles.workers.push_back(r);
    }
  }
  return roles;
}

}  // namespace shardflow::train
