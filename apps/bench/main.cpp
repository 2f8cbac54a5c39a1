// shardflow-bench SUBCOMMAND [args...]: benchmarks that run side by side with their baselines
// in one run and print ratios. `shardflow-bench --help` lists the subcommands.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::bench {

std::vector<BenchEntry>& Registry() {
  static std::vector<BenchEntry> registry;
  return registry;
}

namespace {

void PrintUsage(int rank) {
  if (rank != 0) return;
  auto entries = Registry();
  std::sort(entries.begin(), entries.end(),
            [](const BenchEntry& a, const BenchEntry& b) { return a.name < b.name; });
  std::printf("usage: shardflow-bench SUBCOMMAND [--help] [args...]\n\nsubcommands:\n");
  for (const auto& e : entries) std::printf("  %-12s %s\n", e.name.c_str(), e.summary.c_str());
}

}  // namespace
}  // namespace shardflow::bench

int main(int argc, char** argv) {
  using shardflow::bench::Registry;
  const shardflow::bench::BenchEntry* entry = nullptr;
  std::vector<std::string> args;
  return shardflow::RunMain(
      argc, argv,
      [&](shardflow::MpiEnvironment& env) {
        const std::string name = argc > 1 ? argv[1] : "";
        if (name.empty() || name == "--help" || name == "-h") {
          shardflow::bench::PrintUsage(env.rank());
          throw shardflow::EarlyExit{name.empty() ? 2 : 0};
        }
        for (const auto& e : Registry()) {
          if (e.name == name) entry = &e;
        }
        if (entry == nullptr) {
          throw shardflow::Error(shardflow::ErrorCode::kInvalidArgument,
                                 "unknown benchmark '" + name + "'",
                                 {.hint = "shardflow-bench --help lists them"});
        }
        args.assign(argv + 2, argv + argc);
      },
      [&](shardflow::MpiEnvironment&) { return entry->run(args); });
}
