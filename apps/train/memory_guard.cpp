#include "apps/train/memory_guard.hpp"

#include <cstdio>

#include "apps/common/stage_plan.hpp"

namespace shardflow::train {

int64_t ModelStateBytes(int64_t parameters, const OptimizerOptions& optimizer) {
  const int64_t slots = static_cast<int64_t>(MakeOptimizer(optimizer, 1)->Slots().size());
  return parameters * static_cast<int64_t>(sizeof(float)) * (2 + slots);
}

void CheckMemoryCap(const TrainerOptions& o, int64_t parameters, const std::string& holder) {
  if (o.max_memory_mb <= 0) return;
  const double need = static_cast<double>(ModelStateBytes(parameters, o.optimizer)) / (1 << 20);
  if (need <= o.max_memory_mb) return;
  char text[512];
  std::snprintf(text, sizeof(text),
                "%s needs %.0f MiB per rank for %lld parameters, their gradients and %s state, "
                "over train.max_memory_mb = %.0f",
                holder.c_str(), need, static_cast<long long>(parameters), o.optimizer.name.c_str(),
                o.max_memory_mb);
  throw Error(ErrorCode::kInvalidArgument, text,
              {.key = "train.max_memory_mb",
               .hint = "split the model over more ranks: embedding tables over parameter "
                       "servers (dist.strategy = parameter_server, dist.ps_tables = sparse), "
                       "other layers with dist.pipeline_stages or dist.tensor_parallel"});
}

int64_t AvailableMemoryBytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return -1;
  long long available_kb = -1;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %lld kB", &available_kb) == 1) break;
  }
  std::fclose(f);
  return available_kb > 0 ? static_cast<int64_t>(available_kb) * 1024 : -1;
}

void CheckMemoryFits(const TrainerOptions& o, int64_t parameters, int ranks_here,
                     const std::string& holder) {
  if (o.max_memory_mb > 0) return CheckMemoryCap(o, parameters, holder);
  const int64_t available = AvailableMemoryBytes();
  if (available <= 0) return;
  const double need = static_cast<double>(ModelStateBytes(parameters, o.optimizer)) / (1 << 20);
  const double have = static_cast<double>(available) / (1 << 20);
  if (need * ranks_here <= have) return;
  char text[640];
  std::snprintf(text, sizeof(text),
                "%s needs %.0f MiB per rank for %lld parameters, their gradients and %s state "
                "(%.0f MiB for the %d rank(s) on this node); the node has %.0f MiB available",
                holder.c_str(), need, static_cast<long long>(parameters), o.optimizer.name.c_str(),
                need * ranks_here, ranks_here, have);
  throw Error(ErrorCode::kInvalidArgument, text,
              {.key = "train.max_memory_mb",
               .hint = "embedding tables: dist.strategy = parameter_server keeps them split over "
                       "the servers (dist.ps_tables = sparse); other layers: dist.pipeline_stages "
                       "or dist.tensor_parallel"});
}

void CheckModelPlan(const TrainerOptions& o, int rank) {
  if (!o.model_parallel.grid.model_parallel() && o.max_memory_mb <= 0) return;
  const apps::RankPlan plan =
      apps::PlanRank(o, o.model_parallel.grid, o.model_parallel.stage_boundaries, rank);
  CheckMemoryCap(o, plan.parameters, plan.holder);
}

}  // namespace shardflow::train
