#include "apps/train/straggler_log.hpp"

#include <chrono>

#include "comm/collectives.hpp"

namespace shardflow::train {

StragglerReport StragglerLog::Gather(comm::Communicator& comm) const {
  if (comm.size() < 2) return {};
  const auto start = std::chrono::steady_clock::now();
  // The steps are equal on every rank; the smallest count guards a rank that stopped early.
  const auto steps = static_cast<size_t>(
      comm::AllreduceInt64(comm, static_cast<int64_t>(steps_.size()), comm::ReduceOp::kMin));
  const std::vector<StepArrival> all = comm::GatherConcat(comm, steps_.data(), steps);
  if (comm.rank() != 0) return {};
  std::vector<std::vector<StepArrival>> per_rank(static_cast<size_t>(comm.size()));
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * steps);
    per_rank[r].assign(first, first + static_cast<std::ptrdiff_t>(steps));
  }
  StragglerReport report = AttributeStragglers(per_rank);
  report.gather_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace shardflow::train
