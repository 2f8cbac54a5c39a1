#include "apps/common/rank_grid.hpp"

#include "core/error.hpp"

namespace shardflow::apps {

std::string GridShape::ToString() const {
  auto plural = [](int n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return plural(replicas, "replica", "replicas") + " x " + plural(stages, "stage", "stages") +
         " x " + plural(ways, "tensor way", "tensor ways");
}

GridShape MakeGridShape(int ranks, int stages, int ways) {
  if (stages < 1 || ways < 1 || ranks < 1 || ranks % (stages * ways) != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(ranks) + " ranks do not factor into data replicas x " +
                    "pipeline_stages " + std::to_string(stages) + " x tensor_parallel " +
                    std::to_string(ways),
                {.key = "dist.pipeline_stages",
                 .hint = "run a multiple of pipeline_stages x tensor_parallel ranks"});
  }
  return {.replicas = ranks / (stages * ways), .stages = stages, .ways = ways};
}

GridPlace PlaceOf(const GridShape& shape, int rank) {
  GridPlace p;
  p.way = rank % shape.ways;
  const int rest = rank / shape.ways;
  p.replica = rest % shape.replicas;
  p.stage = rest / shape.replicas;
  return p;
}

int RankAt(const GridShape& shape, const GridPlace& place) {
  return (place.stage * shape.replicas + place.replica) * shape.ways + place.way;
}

}  // namespace shardflow::apps
