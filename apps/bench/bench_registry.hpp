// shardflow-bench subcommands register themselves here, one file each:
//
//   // apps/bench/bench_read.cpp
//   static int RunRead(const std::vector<std::string>& args);
//   SHARDFLOW_BENCH("read", "TFRecord read + CRC + Example parse vs cat", RunRead);
//
// The function gets the arguments after the subcommand name, runs under the MpiEnvironment
// that main() set up, and returns the exit code. Every benchmark prints a human-readable table
// and, with --json, one JSON object per result line; it checks its results.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace shardflow::bench {

using BenchFunction = std::function<int(const std::vector<std::string>& args)>;

struct BenchEntry {
  std::string name;
  std::string summary;
  BenchFunction run;
};

std::vector<BenchEntry>& Registry();

struct BenchRegistrar {
  BenchRegistrar(std::string name, std::string summary, BenchFunction run) {
    Registry().push_back({std::move(name), std::move(summary), std::move(run)});
  }
};

}  // namespace shardflow::bench

#define SHARDFLOW_BENCH_CONCAT_(a, b) a##b
#define SHARDFLOW_BENCH_NAME_(line) SHARDFLOW_BENCH_CONCAT_(shardflow_bench_registrar_, line)
#define SHARDFLOW_BENCH(name, summary, fn) \
  static ::shardflow::bench::BenchRegistrar SHARDFLOW_BENCH_NAME_(__LINE__)(name, summary, fn)
