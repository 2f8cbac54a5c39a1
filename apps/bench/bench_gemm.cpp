// shardflow-bench gemm: the float GEMM kernels side by side on a model's training-step shapes.
//
//   shardflow-bench gemm [--model mlp|cnn|all] [--batch 64] [--threads 1] [--reps 5] [--json]
//
// For every GEMM of one training step (step_gemms.hpp: forward, weight gradient and input
// gradient of each dense and conv layer, convolutions per im2col chunk) it times Eigen's
// kernel, shardflow's own AVX-512 kernel and the automatic choice (cpu::SetGemmKernel), and the
// library GEMMs the build links (oneDNN's sgemm; OpenBLAS's when installed: library_gemm.hpp),
// all interleaved in each of --reps rounds (the machine may be shared), and prints the median
// GFLOP/s of each, own / Eigen, and the whole step's GEMM time per contender and at the fastest
// per shape. On a CPU without
// AVX-512 all three are Eigen's x86-64-v3 kernel. Where the CPU has bf16 products, they run as
// one more contender (bf16: core/precision/bf16/, the rounding included) and the step's bf16
// rate over auto's is printed. Results are checked.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "apps/bench/step_gemms.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/error.hpp"
#include "core/precision/bf16/cpu_bf16_gemm.hpp"
#include "core/precision/precision.hpp"

namespace shardflow::bench {
namespace {

constexpr const char* kGptSpec =
    "tokens:65:384, block:6:causal, block:6:causal, block:6:causal, block:6:causal, "
    "block:6:causal, block:6:causal, layernorm, dense:65";

struct GemmArgs {
  std::vector<std::string> models = {"mlp", "cnn"};
  int64_t batch = 64;
  int threads = 1, reps = 5;
  bool json = false;
};

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int RunGemm(const std::vector<std::string>& argv) {
  GemmArgs a;
  for (FlagCursor f(argv, "gemm"); f.Next();) {
    if (f.IsHelp()) {
      std::printf(
          "shardflow-bench gemm [--model mlp|cnn|resnet|gpt|all] [--batch 64] [--threads 1] "
          "[--reps 5] [--json]\n");
      return 0;
    }
    if (f.Is("--model")) {
      const std::string v = f.Value();
      if (v != "all" && v != "mlp" && v != "cnn" && v != "resnet" && v != "gpt") {
        throw Error(ErrorCode::kInvalidArgument, "--model must be mlp, cnn, resnet, gpt or all");
      }
      a.models = v == "all" ? std::vector<std::string>{"mlp", "cnn"} : std::vector{v};
    } else if (f.Is("--batch")) {
      a.batch = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--threads")) {
      a.threads = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--reps")) {
      a.reps = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--json")) {
      a.json = true;
    } else {
      f.Unknown();
    }
  }
  cpu::SetIntraOpThreads(a.threads);
  // Contenders: Eigen's kernel, ours, the automatic choice, then each library GEMM this build
  // links (library_gemm.hpp), all interleaved in every round.
  struct Contender {
    std::string name;
    std::function<double(const GemmShape&, GemmBuffers&)> time;
  };
  std::vector<Contender> cs;
  for (auto [kernel, name] :
       {std::pair{cpu::GemmKernel::kEigen, "eigen"}, std::pair{cpu::GemmKernel::kOwn, "own"},
        std::pair{cpu::GemmKernel::kAuto, "auto"}}) {
    cs.push_back({name, [kernel](const GemmShape& g, GemmBuffers& buf) {
                    cpu::SetGemmKernel(kernel);
                    return TimeShape(g, buf);
                  }});
  }
  for (GemmLibrary lib : kGemmLibraries) {
    if (!GemmLibraryBuilt(lib)) continue;
    std::printf("library %s: %s\n", GemmLibraryName(lib), GemmLibraryDescription(lib).c_str());
    cs.push_back({GemmLibraryName(lib), [lib](const GemmShape& g, GemmBuffers& buf) {
                    return TimeLibraryShape(lib, g, buf);
                  }});
  }
  // bf16 products (core/precision/bf16/), where the CPU runs them: oneDNN's bf16 matmul with
  // the rounding of A and B to bf16 included, as a layer pays it. Another precision, so it is
  // left out of "the fastest per shape".
  const size_t float_contenders = cs.size();
  if (bf16::CpuUnsupported().empty()) {
    std::printf("bf16: oneDNN %s\n", bf16::CpuKernelName().c_str());
    cs.push_back({"bf16", [](const GemmShape& g, GemmBuffers& buf) {
                    PrecisionScope bf16(Device::kCpu, "bf16");
                    return TimeShape(g, buf);
                  }});
  }
  const size_t nc = cs.size();
  const cpu::GemmKernel before = cpu::CurrentGemmKernel();
  for (const std::string& name : a.models) {
    // gpt: shardflow-bench transformer's default model (a batch of 256-token sequences).
    Sequential<float> m =
        name == "gpt" ? Sequential<float>(kGptSpec, {256}) : Sequential<float>(name, {28, 28, 1});
    const std::vector<GemmShape> shapes = StepGemms(m, a.batch);
    std::printf("model %s, batch %lld, threads %d, target %s: GFLOP/s per shape (median of %d)\n",
                name.c_str(), static_cast<long long>(a.batch), cpu::IntraOpThreads(),
                cpu::GemmTarget(), a.reps);
    std::printf("  %-12s %-4s %2s %2s %7s %6s %6s %5s", "layer", "what", "ta", "tb", "M", "N", "K",
                "calls");
    for (const Contender& c : cs) std::printf(" %8s", c.name.c_str());
    std::printf(" %7s\n", "own/eig");
    std::vector<double> total(nc, 0.0);
    double best_total = 0;
    for (const GemmShape& g : shapes) {
      GemmBuffers buf = BuffersFor(g);
      std::vector<std::vector<double>> t(nc);
      for (int rep = 0; rep < a.reps + 1; ++rep) {
        for (size_t i = 0; i < nc; ++i) {
          const double s = cs[i].time(g, buf);
          if (rep > 0) t[i].push_back(s);  // round 0 warms up
        }
      }
      const double flops = 2.0 * static_cast<double>(g.m) * g.n * g.k * g.count;
      std::vector<double> med(nc);
      for (size_t i = 0; i < nc; ++i) {
        med[i] = MedianOf(t[i]);
        total[i] += med[i];
      }
      best_total += *std::min_element(med.begin(), med.begin() + float_contenders);
      std::printf("  %-12s %-4s %2d %2d %7lld %6lld %6lld %5lld", m.layer_name(g.layer).c_str(),
                  g.what, g.ta, g.tb, static_cast<long long>(g.m), static_cast<long long>(g.n),
                  static_cast<long long>(g.k), static_cast<long long>(g.count));
      for (size_t i = 0; i < nc; ++i) std::printf(" %8.1f", flops / med[i] / 1e9);
      std::printf(" %6.2fx\n", med[0] / med[1]);
      if (a.json) {
        nlohmann::json j = {{"bench", "gemm"}, {"model", name},   {"layer", m.layer_name(g.layer)},
                            {"what", g.what},  {"m", g.m},        {"n", g.n},
                            {"k", g.k},        {"calls", g.count}};
        for (size_t i = 0; i < nc; ++i) j[cs[i].name + "_gflops"] = flops / med[i] / 1e9;
        std::printf("%s\n", j.dump().c_str());
      }
    }
    std::printf("  step's GEMMs, ms:");
    for (size_t i = 0; i < nc; ++i) std::printf(" %s %.2f,", cs[i].name.c_str(), 1e3 * total[i]);
    std::printf(" the fastest float per shape %.2f (auto %.2fx eigen; fastest / auto %.2f)\n",
                1e3 * best_total, total[0] / total[2], best_total / total[2]);
    if (nc > float_contenders) {
      std::printf("  bf16 / auto step's GEMM rate: %.2f (bf16 %.2f ms, auto %.2f ms)\n",
                  total[2] / total[nc - 1], 1e3 * total[nc - 1], 1e3 * total[2]);
    }
  }
  cpu::SetGemmKernel(before);
  return 0;
}

}  // namespace

SHARDFLOW_BENCH("gemm", "float GEMM kernels (Eigen vs shardflow's AVX-512) on a step's shapes",
                RunGemm);

}  // namespace shardflow::bench
