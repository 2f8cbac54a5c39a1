// Where a parameter-server job's servers run (dist.ps_placement), a pure function of the rank
// count, the server count and which node each rank is on, so every rank computes the same roles
// in the parse phase without talking to the others.
//   last      the last dist.ps_ranks ranks (the default; with Slurm's block distribution and a
//             heterogeneous job, the ranks of the last nodes: CPU-only nodes of a GPU job).
//   per_node  one server per node, the highest rank of each, round-robin over the nodes when
//             there are more servers than nodes: spreads the servers' network traffic.
//   R1,R2,..  exactly these ranks (as many as dist.ps_ranks).
// Rank 0 is always worker 0, the chief: a placement that would make it a server is refused
// (per_node skips it). Workers keep the job's rank order.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace shardflow::train {

struct PsRoles {
  std::vector<int> servers;  // job ranks, ascending; server k holds arena slice k
  std::vector<int> workers;  // job ranks, ascending; workers[0] is rank 0, the chief

  // Position of `rank` among the servers (workers), or -1 if it is not one.
  int server_index(int rank) const;
  int worker_index(int rank) const;
};

// `node_of_rank[r]` identifies rank r's node (any value shared by the ranks of a node; empty:
// each rank is its own node). Throws Error(kInvalidArgument), key dist.ps_placement, naming what
// is wrong with a rank list (count, range, duplicates, rank 0) or an unknown word.
PsRoles PlaceParameterServers(int ranks, int servers, const std::string& placement,
                              const std::vector<int>& node_of_rank);

// dist.ps_transport: "p2p" or "rma" as given; "auto" is rma when every rank shares one node
// (the windows are then shared memory: shardflow-bench ps-transport, docs/design.md decision 38)
// and the node's `cores` are at least its ranks (0: not known), p2p otherwise: an rma server
// scans its windows and needs a core, while a p2p server sleeps until a message comes. Limits:
// `cores` is the machine's count, not the cores the launcher bound the ranks to. Throws
// Error(kInvalidArgument), key dist.ps_transport, on another word.
std::string ResolvePsTransport(const std::string& choice, const std::vector<int>& node_of_rank,
                               int cores);

// "3,7": ranks joined by commas, for logs and for RolesOf.
std::string RankList(const std::vector<int>& ranks);

// The roles of a job whose servers are `servers` (job ranks; empty: the last `count` ranks), as
// PlaceParameterServers gave them.
PsRoles RolesOf(int ranks, int count, const std::vector<int>& servers);

}  // namespace shardflow::train
