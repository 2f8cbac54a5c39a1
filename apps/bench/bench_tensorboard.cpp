// shardflow-bench tensorboard [--steps N] [--flush-every K] [--json]: what the training loop's
// per-step TensorBoard scalars cost rank 0 (shardflow-train's TensorBoard log): per step one
// Event of six step/* scalars built, serialized and appended to the buffered events file; a
// flush every K steps (the metrics line's; default 100). Prints microseconds per step and the
// event bytes per step, written into a fresh folder under $TMPDIR (or /tmp), removed after.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/config_types.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "core/timer.hpp"
#include "io/tensorboard/event_writer.hpp"

namespace shardflow::bench {
namespace {

const char kUsage[] = "usage: shardflow-bench tensorboard [--steps N] [--flush-every K] [--json]";

int64_t ParseCount(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  if (!ValueCodec<int64_t>::Parse(text, &v, nullptr) || v < 1) {
    throw Error(ErrorCode::kInvalidArgument, "bad " + flag + " '" + text + "' (want >= 1)",
                {.hint = kUsage});
  }
  return v;
}

// Microseconds per step of writing `steps` steps' scalars to one events file in `dir`.
double StepMicros(const std::string& dir, int64_t steps, int64_t flush_every) {
  io::EventWriter writer(dir);
  Stopwatch watch;
  for (int64_t step = 1; step <= steps; ++step) {
    const double x = static_cast<double>(step);
    // What TensorBoardLog::Step builds: six tags, the values of one step.
    std::vector<std::pair<std::string, double>> scalars;
    scalars.reserve(6);
    scalars.emplace_back(std::string("step/loss"), 1.0 / x);
    scalars.emplace_back(std::string("step/learning_rate"), 0.05);
    scalars.emplace_back(std::string("step/samples_per_s"), 40000.0 + x);
    scalars.emplace_back(std::string("step/input_wait_fraction"), 0.01);
    scalars.emplace_back(std::string("step/compute_fraction"), 0.9);
    scalars.emplace_back(std::string("step/comm_fraction"), 0.09);
    writer.AddScalars(step, scalars);
    if (step % flush_every == 0) writer.Flush();
  }
  writer.Flush();
  return static_cast<double>(watch.Nanos()) / 1e3 / static_cast<double>(steps);
}

int RunTensorBoard(const std::vector<std::string>& args) {
  int64_t steps = 100000, flush_every = 100;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--steps" && i + 1 < args.size()) {
      steps = ParseCount(args[i], args[i + 1]);
      ++i;
    } else if (args[i] == "--flush-every" && i + 1 < args.size()) {
      flush_every = ParseCount(args[i], args[i + 1]);
      ++i;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf("%s\n", kUsage);
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown argument '" + args[i] + "'",
                  {.hint = kUsage});
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/shardflow-bench-tb-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    throw Error(ErrorCode::kIo, "cannot create a temporary folder", {.file = dir});
  }
  double micros = 0;
  uintmax_t bytes = 0;
  try {
    micros = StepMicros(dir, steps, flush_every);
    for (const std::string& f : io::EventFiles(dir)) bytes += std::filesystem::file_size(f);
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);
  const double bytes_per_step = static_cast<double>(bytes) / static_cast<double>(steps);
  std::printf("%lld steps, flush every %lld: %.3f us per step, %.1f bytes per step\n",
              static_cast<long long>(steps), static_cast<long long>(flush_every), micros,
              bytes_per_step);
  if (json) {
    std::printf(
        "{\"bench\":\"tensorboard\",\"steps\":%lld,\"flush_every\":%lld,\"us_per_step\":%.4f,"
        "\"bytes_per_step\":%.1f}\n",
        static_cast<long long>(steps), static_cast<long long>(flush_every), micros, bytes_per_step);
  }
  return 0;
}

SHARDFLOW_BENCH("tensorboard", "cost of the per-step TensorBoard scalars (rank 0)", RunTensorBoard);

}  // namespace
}  // namespace shardflow::bench
