// RankGrid: how the ranks of a job factor into data replicas x pipeline stages x tensor ways.
//
// A job of N ranks with [dist] pipeline_stages = S and tensor_parallel = T has D = N / (S T)
// data-parallel replicas of the model; each replica is S stages of T ways each. Rank order:
//   rank = (stage * D + replica) * T + way
// so the T ways of one stage (one all-reduce per layer pair, the most traffic) are consecutive
// ranks and share a node, the replicas of a stage come next (their gradient all-reduce stays on
// a node when they fit, and takes the shared-memory path there), and stages are outermost: a
// pipeline crosses nodes, where only one activation per micro-batch moves between neighbours.
// Plain data parallelism is S = T = 1, D = N, and rank = replica.
// Every rank of a replica reads the replica's shard of the data (shard `replica` of D).
// Thread-safety: values; no shared state.
#pragma once

#include <string>
#include <vector>

namespace shardflow::apps {

struct GridShape {
  int replicas = 1;  // D
  int stages = 1;    // S
  int ways = 1;      // T
  int ranks() const { return replicas * stages * ways; }
  bool model_parallel() const { return stages > 1 || ways > 1; }
  // "2 replicas x 2 stages x 1 way".
  std::string ToString() const;
};

// The grid of `ranks` ranks for S stages and T ways. Throws Error(kInvalidArgument), key
// dist.pipeline_stages, naming N, S and T when S or T is < 1 or S x T does not divide N.
GridShape MakeGridShape(int ranks, int stages, int ways);

struct GridPlace {
  int replica = 0;
  int stage = 0;
  int way = 0;
};

// Where `rank` sits, and the rank at a place. REQUIRES: 0 <= rank < shape.ranks().
GridPlace PlaceOf(const GridShape& shape, int rank);
int RankAt(const GridShape& shape, const GridPlace& place);

}  // namespace shardflow::apps
