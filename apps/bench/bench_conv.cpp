// shardflow-bench conv: shardflow's im2col + GEMM convolution against oneDNN's on a model's
// convolutions (issue 25's "library kernels where they win", docs/design.md decision 53).
//
//   shardflow-bench conv [--model cnn|resnet|all] [--batch 64] [--threads 1] [--reps 5] [--json]
//
// Every convolution of the model (residual blocks' included) as a conv layer of its own: the
// forward pass and the backward pass (kernel gradient, and the input gradient past the first
// layer) timed with the convolution forced to shardflow's own path, to oneDNN, and left to the
// automatic choice (cpu::SetConvKernel), the three interleaved in each of --reps rounds; medians
// in GFLOP/s, own / oneDNN, and what auto takes per pass (Winograd where core/cpu/winograd.hpp
// applies, then core/cpu/onednn_conv.hpp's rule).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "apps/bench/step_gemms.hpp"
#include "core/arena.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/cpu/winograd.hpp"
#include "core/error.hpp"
#include "core/layers/conv2d.hpp"

namespace shardflow::bench {
namespace {

struct ConvArgs {
  std::vector<std::string> models = {"cnn", "resnet"};
  int64_t batch = 64;
  int threads = 1, reps = 5;
  bool json = false;
};

ConvArgs ParseConvArgs(const std::vector<std::string>& argv, bool* help) {
  ConvArgs a;
  for (FlagCursor f(argv, "conv"); f.Next();) {
    if (f.IsHelp()) {
      std::printf(
          "shardflow-bench conv [--model cnn|resnet|all] [--batch 64] [--threads 1] [--reps 5] "
          "[--json]\n");
      *help = true;
      return a;
    }
    if (f.Is("--model")) {
      const std::string v = f.Value();
      if (v != "all" && v != "cnn" && v != "resnet") {
        throw Error(ErrorCode::kInvalidArgument, "--model must be cnn, resnet or all");
      }
      a.models = v == "all" ? std::vector<std::string>{"cnn", "resnet"} : std::vector{v};
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
  return a;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One convolution as a layer of its own, with its input and output gradient.
struct ConvLayer {
  std::unique_ptr<Layer<float>> layer = nullptr;
  Arena<float> arena;
  Tensor x, dy;
  ConvLayer(const ConvShape& c, int64_t batch) {
    layer = MakeConv2D<float>({.filters = c.filters,
                               .kernel_h = c.g.kh,
                               .kernel_w = c.g.kw,
                               .stride = c.g.stride,
                               .same_padding = true});
    BuildContext<float> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_conv"};
    layer->Build({c.g.h, c.g.w, c.g.c}, ctx);
    arena.Allocate();
    std::fill(arena.params(), arena.params() + arena.size(), 0.01f);
    arena.ZeroGrads();
    x = Tensor(DType::kFloat32, {batch, c.g.h, c.g.w, c.g.c});
    dy = Tensor(DType::kFloat32, {batch, c.g.oh, c.g.ow, c.filters});
    std::fill(x.data<float>(), x.data<float>() + x.num_elements(), 0.5f);
    std::fill(dy.data<float>(), dy.data<float>() + dy.num_elements(), 0.25f);
  }
  // Seconds of a forward and of a backward pass.
  std::pair<double, double> Time(bool need_dx) {
    const auto t0 = std::chrono::steady_clock::now();
    layer->Forward(x, {.training = true});
    const auto t1 = std::chrono::steady_clock::now();
    layer->Backward(dy, need_dx);
    const auto t2 = std::chrono::steady_clock::now();
    return {std::chrono::duration<double>(t1 - t0).count(),
            std::chrono::duration<double>(t2 - t1).count()};
  }
};

std::string AutoTakes(const ConvShape& c, int64_t batch) {
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  cpu::SetConvKernel(cpu::ConvKernel::kAuto);
  std::string out;
  for (auto pass :
       {cpu::ConvPass::kForward, cpu::ConvPass::kBackwardFilter, cpu::ConvPass::kBackwardData}) {
    if (pass == cpu::ConvPass::kBackwardData && !c.need_dx) continue;
    std::string impl;
    if (cpu::WinogradTakes(c.g, c.filters, batch)) {
      out += std::string(out.empty() ? "" : ", ") + "winograd";
      continue;
    }
    const bool lib = cpu::LibraryConvTakes(c.g, c.filters, batch, pass, &impl);
    out += std::string(out.empty() ? "" : ", ") + (lib ? "onednn" : "own");
    if (!impl.empty() && !lib) out += " (onednn: " + impl + ")";
  }
  cpu::SetConvKernel(before);
  return out;
}

int RunConv(const std::vector<std::string>& argv) {
  bool help = false;
  const ConvArgs a = ParseConvArgs(argv, &help);
  if (help) return 0;
  if (!cpu::OneDnnBuilt()) {
    throw Error(ErrorCode::kInvalidArgument, "this build has no oneDNN (SHARDFLOW_ONEDNN=OFF)");
  }
  cpu::SetIntraOpThreads(a.threads);
  const cpu::ConvKernel kernels[] = {cpu::ConvKernel::kOwn, cpu::ConvKernel::kOneDnn,
                                     cpu::ConvKernel::kAuto};
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  for (const std::string& name : a.models) {
    Sequential<float> m(name, {28, 28, 1});
    std::printf(
        "model %s, batch %lld, threads %d, GEMM target %s: GFLOP/s per convolution (median of "
        "%d; a direct convolution's FLOPs over the time, Winograd's too)\n",
        name.c_str(), static_cast<long long>(a.batch), cpu::IntraOpThreads(), cpu::GemmTarget(),
        a.reps);
    std::printf("  %-26s %-18s %8s %8s %8s %8s %8s %8s  %s\n", "convolution", "in -> out",
                "fwd own", "onednn", "auto", "bwd own", "onednn", "auto",
                "auto takes (fwd, dW, dx)");
    double total[2][3] = {{0, 0, 0}, {0, 0, 0}};
    for (const ConvShape& c : StepConvs(m)) {
      ConvLayer layer(c, a.batch);
      std::vector<double> t[2][3];
      for (int rep = 0; rep <= a.reps; ++rep) {
        for (int i = 0; i < 3; ++i) {
          cpu::SetConvKernel(kernels[i]);
          const auto [f, b] = layer.Time(c.need_dx);
          if (rep > 0) {  // round 0 builds primitives and warms up
            t[0][i].push_back(f);
            t[1][i].push_back(b);
          }
        }
      }
      const double fwd_flops = 2.0 * static_cast<double>(a.batch) * c.g.oh * c.g.ow * c.filters *
                               c.g.kh * c.g.kw * c.g.c;
      const double flops[2] = {fwd_flops, fwd_flops * (c.need_dx ? 2 : 1)};
      double med[2][3];
      for (int p = 0; p < 2; ++p) {
        for (int i = 0; i < 3; ++i) {
          med[p][i] = Median(t[p][i]);
          total[p][i] += med[p][i];
        }
      }
      const std::string label = m.layer_name(c.layer) + "/" + c.name;
      const std::string shape = std::to_string(c.g.h) + "x" + std::to_string(c.g.c) + " " +
                                std::to_string(c.g.kh) + "x" + std::to_string(c.g.kw) + "/" +
                                std::to_string(c.g.stride) + " -> " + std::to_string(c.filters);
      const std::string takes = AutoTakes(c, a.batch);
      std::printf("  %-26s %-18s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f  %s\n", label.c_str(),
                  shape.c_str(), flops[0] / med[0][0] / 1e9, flops[0] / med[0][1] / 1e9,
                  flops[0] / med[0][2] / 1e9, flops[1] / med[1][0] / 1e9,
                  flops[1] / med[1][1] / 1e9, flops[1] / med[1][2] / 1e9, takes.c_str());
      if (a.json) {
        nlohmann::json j = {{"bench", "conv"},      {"model", name},        {"conv", label},
                            {"h", c.g.h},           {"c", c.g.c},           {"k", c.g.kh},
                            {"stride", c.g.stride}, {"filters", c.filters}, {"auto", takes}};
        const char* names[] = {"own", "onednn", "auto"};
        for (int i = 0; i < 3; ++i) {
          j[std::string("fwd_ms_") + names[i]] = 1e3 * med[0][i];
          j[std::string("bwd_ms_") + names[i]] = 1e3 * med[1][i];
        }
        std::printf("%s\n", j.dump().c_str());
      }
    }
    std::printf(
        "  all convolutions, ms per step: forward own %.2f, onednn %.2f, auto %.2f; backward own "
        "%.2f, onednn %.2f, auto %.2f (auto %.2fx own)\n",
        1e3 * total[0][0], 1e3 * total[0][1], 1e3 * total[0][2], 1e3 * total[1][0],
        1e3 * total[1][1], 1e3 * total[1][2],
        (total[0][0] + total[1][0]) / (total[0][2] + total[1][2]));
  }
  cpu::SetConvKernel(before);
  return 0;
}

}  // namespace

SHARDFLOW_BENCH("conv", "convolutions: shardflow's im2col + GEMM vs oneDNN on a model's shapes",
                RunConv);

}  // namespace shardflow::bench
