// shardflow-bench trace [--iterations N] [--json]: the cost of one SF_TRACE_SCOPE, side by side
// with the same loop without it: tracing off (must be near zero), on with one thread, and on
// with two threads recording at once (per-thread buffers: no shared lock). Checks that the
// enabled runs recorded exactly one span per iteration and the disabled run none.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/config_types.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"

namespace shardflow::bench {
namespace {

volatile uint64_t g_sink = 0;  // keeps the loop bodies from being optimised away

// ns per iteration of a loop doing a trivial body, with or without a span around it.
double LoopNanos(int64_t iterations, bool with_span) {
  Stopwatch watch;
  for (int64_t i = 0; i < iterations; ++i) {
    if (with_span) {
      SF_TRACE_SCOPE("bench span");
      g_sink = g_sink + 1;
    } else {
      g_sink = g_sink + 1;
    }
  }
  return static_cast<double>(watch.Nanos()) / static_cast<double>(iterations);
}

uint64_t RecordedSpans() {
  uint64_t n = 0;
  for (const TraceThread& thread : SnapshotTrace()) {
    for (const TraceEvent& event : thread.events) n += event.name == "bench span" ? 1 : 0;
  }
  return n;
}

int RunTrace(const std::vector<std::string>& args) {
  int64_t iterations = 500000;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--iterations" && i + 1 < args.size()) {
      if (!ValueCodec<int64_t>::Parse(args[++i], &iterations, nullptr)) {
        throw Error(ErrorCode::kInvalidArgument, "bad --iterations '" + args[i] + "'");
      }
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf("usage: shardflow-bench trace [--iterations N] [--json]\n");
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown argument '" + args[i] + "'",
                  {.hint = "usage: shardflow-bench trace [--iterations N] [--json]"});
    }
  }
  if (iterations <= 0 || static_cast<uint64_t>(iterations) > TraceBufferLimit()) {
    throw Error(ErrorCode::kInvalidArgument,
                "--iterations must be in [1, " + std::to_string(TraceBufferLimit()) + "]");
  }

  StopTracing();
  ClearTrace();
  const double baseline = LoopNanos(iterations, false);
  const double disabled = LoopNanos(iterations, true);
  const uint64_t disabled_spans = RecordedSpans();

  StartTracing();
  const double enabled = LoopNanos(iterations, true);
  const uint64_t enabled_spans = RecordedSpans();
  ClearTrace();

  double two_threads[2] = {0, 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] { two_threads[t] = LoopNanos(iterations, true); });
  }
  for (auto& thread : threads) thread.join();
  StopTracing();
  const uint64_t threaded_spans = RecordedSpans();
  ClearTrace();

  if (disabled_spans != 0 || enabled_spans != static_cast<uint64_t>(iterations) ||
      threaded_spans != 2 * static_cast<uint64_t>(iterations)) {
    throw Error(ErrorCode::kInternal, "trace bench recorded " + std::to_string(disabled_spans) +
                                          "/" + std::to_string(enabled_spans) + "/" +
                                          std::to_string(threaded_spans) + " spans, wanted 0/" +
                                          std::to_string(iterations) + "/" +
                                          std::to_string(2 * iterations));
  }

  const double threaded = (two_threads[0] + two_threads[1]) / 2;
  struct Row {
    const char* name;
    double ns;
  };
  const Row rows[] = {{"no span (baseline)", baseline},
                      {"span, tracing off", disabled},
                      {"span, tracing on, 1 thread", enabled},
                      {"span, tracing on, 2 threads", threaded}};
  std::printf("%-30s %12s %14s\n", "loop body", "ns/iter", "ns over base");
  for (const Row& row : rows) {
    std::printf("%-30s %12.2f %14.2f\n", row.name, row.ns, row.ns - baseline);
  }
  if (json) {
    for (const Row& row : rows) {
      std::printf(
          "{\"bench\":\"trace\",\"case\":\"%s\",\"iterations\":%lld,\"ns_per_iter\":%.3f,"
          "\"ns_over_baseline\":%.3f}\n",
          row.name, static_cast<long long>(iterations), row.ns, row.ns - baseline);
    }
  }
  return 0;
}

SHARDFLOW_BENCH("trace", "cost of SF_TRACE_SCOPE off / on / on with 2 threads", RunTrace);

}  // namespace
}  // namespace shardflow::bench
