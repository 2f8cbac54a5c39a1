#include "core/environment.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/error.hpp"

namespace shardflow::env {
namespace {

const Variable* Find(std::string_view name) {
  for (const Variable& v : Variables()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

[[noreturn]] void Refuse(const Variable& v, const std::string& value) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(v.name) + " = '" + value + "' is not " + std::string(v.takes),
              {.key = std::string(v.name), .hint = "unset it for the default"});
}

}  // namespace

const std::vector<Variable>& Variables() {
  static const std::vector<Variable> table = [] {
    std::vector<Variable> t = {
        {"SHARDFLOW_BINDING_CHECK", "0 or 1",
         "1: two ranks of a host sharing a GPU or cores fail the start (slurm/launch.sh --check)"},
        {"SHARDFLOW_BINDING_REPORT", "0 or 1",
         "1: rank 0 prints every rank's host, GPU and cores at start (set by slurm/launch.sh)"},
        {"SHARDFLOW_CONV", "one of auto, own, onednn, winograd",
         "the CPU's float convolution kernel (auto: Winograd for 5x5 stride-1 'same', then "
         "oneDNN's direct kernels, else im2col + GEMM)"},
        {"SHARDFLOW_CPU_TARGET", "one of x86-64-v3, x86-64-v4",
         "the GEMM's instruction set (default: AVX-512 where the CPU has it)"},
        {"SHARDFLOW_CUDNN", "on, off, or a list of pool, act, bn, lstm",
         "which layers run through cuDNN on a GPU besides convolutions (default on)"},
        {"SHARDFLOW_CUDNN_CONV", "one of on, off",
         "convolutions on a GPU through cuDNN (on, the default) or im2col + cuBLAS (off)"},
        {"SHARDFLOW_CUDNN_SEARCH", "one of find, heuristic",
         "how cuDNN convolution algorithms are chosen (default find: timed once per shape)"},
        {"SHARDFLOW_CUDNN_WORKSPACE_MB", "an integer >= 0",
         "the most workspace a cuDNN convolution may take (default 1024)"},
        {"SHARDFLOW_FUSION", "one of on, off",
         "fused layer pairs (a ReLU inside the pooling after it; default on)"},
        {"SHARDFLOW_GEMM", "one of auto, eigen, own",
         "the float GEMM kernel (auto: shardflow's own on AVX-512 for large shapes, else Eigen)"},
        {"SHARDFLOW_LOG_FILE", "a path", "every rank's log lines also go to this file"},
        {"SHARDFLOW_LOG_LEVEL", "one of debug, info, warn, error",
         "the least severe log line printed (default info; log.level in a config wins)"},
        {"SHARDFLOW_PROGRESS", "one of auto, bar, plain",
         "rank 0's progress: a redrawn bar, or plain lines (auto: plain under a launcher)"},
        {"SHARDFLOW_SIMULATE_CUDA", "0 or 1",
         "1: a simulated CUDA device (the CUDA backend's host twin on the CPU), for tests"},
        {"SHARDFLOW_TEST_CHECKPOINT_FAULT", "PHASE:N or enospc:N",
         "kills rank 0 at a phase of its N-th checkpoint, or fails it as a full disk would", true},
        {"SHARDFLOW_TEST_FAULT", "KIND:RANK:STEP",
         "kills, stops, slows or signals a rank at a step", true},
        {"SHARDFLOW_TEST_ROW_IDS", "a path prefix",
         "each rank appends the record ids of every batch it trains to PREFIX.rankR", true},
        {"SHARDFLOW_THREADS", "an integer >= 1",
         "intra-op threads per rank when train.threads is 0 (slurm/launch.sh sets the rank's "
         "share of the cores)"},
    };
    std::sort(t.begin(), t.end(),
              [](const Variable& a, const Variable& b) { return a.name < b.name; });
    return t;
  }();
  return table;
}

std::optional<std::string> Text(std::string_view name) {
  if (Find(name) == nullptr) {
    throw Error(ErrorCode::kInternal,
                "environment variable " + std::string(name) + " is not in core/environment.cpp");
  }
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

int64_t Int(std::string_view name, int64_t fallback, int64_t min) {
  const std::optional<std::string> text = Text(name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || errno == ERANGE || n < min) {
    Refuse(*Find(name), *text);
  }
  return n;
}

std::string Choice(std::string_view name, std::string_view fallback,
                   std::initializer_list<std::string_view> choices) {
  const std::optional<std::string> text = Text(name);
  if (!text) return std::string(fallback);
  if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
    Refuse(*Find(name), *text);
  }
  return *text;
}

bool Flag(std::string_view name) {
  const std::optional<std::string> text = Text(name);
  if (!text || *text == "0") return false;
  if (*text == "1") return true;
  Refuse(*Find(name), *text);
}

std::string Help() {
  std::string out = "environment (unset or empty: the default):\n";
  for (const Variable& v : Variables()) {
    out += "  " + std::string(v.name) + " (" + std::string(v.takes) + ")" +
           (v.test_only ? " [tests only]" : "") + ": " + std::string(v.meaning) + "\n";
  }
  return out;
}

}  // namespace shardflow::env
