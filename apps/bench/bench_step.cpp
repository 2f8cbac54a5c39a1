// shardflow-bench step: training throughput of one model on the CPU against the compute limit.
//
//   shardflow-bench step [--model mlp|cnn|all] [--batch 128] [--threads 1] [--steps 20]
//                        [--precision fp32|bf16] [--json]
//
// In one run it measures
//   1. training samples/s: forward + softmax cross-entropy + backward + SGD update on random
//      28x28x1 inputs, timed over --steps steps after 3 warm-up steps, with a per-layer
//      breakdown of forward and backward time;
//   2. the compute limit: sgemm (cpu::Gemm, the same call the layers make) timed on exactly
//      the GEMM shapes of one training step (forward, weight gradient and input gradient of
//      every dense and conv layer, convolutions per im2col chunk), giving a FLOP rate;
// and reports the model's training FLOPs per sample (the FLOPs of those GEMMs / batch; the
// elementwise layers add under 1%), the limit in samples/s (rate / FLOPs per sample) and the
// ratio measured / limit (design target >= 0.5), and a second limit at the best rate on offer per
// shape: the fastest of shardflow's GEMM and the library GEMMs the build links (oneDNN's sgemm;
// OpenBLAS's when installed), or oneDNN's convolution for a convolution's pass (issue 25's
// target >= 0.8). Both sides are medians over repetitions, since the machine may be shared. It
// checks the GEMM results and that the loss is finite. --precision bf16 installs that precision
// (core/precision/precision.hpp) for the step and the GEMMs alike (the GEMM line is then oneDNN's
// bf16 matmul on the step's shapes, conversions included), and its best-of line is the faster
// per shape of that matmul (im2col) and oneDNN's bf16 convolution: the float libraries would
// compare with another precision.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "apps/bench/step_gemms.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/mpi_env.hpp"
#include "core/optim/optimizer.hpp"
#include "core/precision/precision.hpp"
#include "core/random.hpp"

namespace shardflow::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct StepArgs {
  std::vector<std::string> models = {"mlp", "cnn"};
  int64_t batch = 128;
  int threads = 1;
  std::string precision = "fp32";
  int steps = 20;
  bool json = false;
};

StepArgs ParseArgs(const std::vector<std::string>& args) {
  StepArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& k = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        throw Error(ErrorCode::kInvalidArgument, "flag " + k + " needs a value");
      }
      return args[++i];
    };
    auto integer = [&](const std::string& v) {
      size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || n <= 0) {
        throw Error(ErrorCode::kInvalidArgument, k + " needs a positive integer, got '" + v + "'");
      }
      return n;
    };
    if (k == "--model") {
      const std::string v = value();
      if (v == "all") {
        a.models = {"mlp", "cnn"};
      } else if (v == "mlp" || v == "cnn" || v == "linear" || v == "resnet") {
        a.models = {v};
      } else {
        throw Error(ErrorCode::kInvalidArgument, "--model must be mlp, cnn, linear, resnet or all");
      }
    } else if (k == "--batch") {
      a.batch = integer(value());
    } else if (k == "--threads") {
      a.threads = static_cast<int>(integer(value()));
    } else if (k == "--steps") {
      a.steps = static_cast<int>(integer(value()));
    } else if (k == "--precision") {
      a.precision = value();
    } else if (k == "--json") {
      a.json = true;
    } else if (k == "--help" || k == "-h") {
      std::printf(
          "usage: shardflow-bench step [--model mlp|cnn|linear|resnet|all (all)] [--batch 128]\n"
          "                            [--threads 1] [--steps 20] [--precision fp32|bf16]\n"
          "                            [--json]\n");
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + k + "'",
                  {.hint = "shardflow-bench step --help"});
    }
  }
  return a;
}

// "fp32", or the precision and the kernels that run its products ("bf16 (oneDNN brg:...)").
std::string Kernels(const std::string& precision) {
  const PrecisionSpec* p = FindPrecision(precision);
  return p == nullptr ? precision : precision + " (" + p->kernels(Device::kCpu) + ")";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds of each shape's calls (medians of 7 passes over all the shapes; the machine may be
// shared, so both sides of the ratio use medians) and the FLOPs of one pass. *best gets, per
// shape, the fastest of that and each library GEMM the build links (library_gemm.hpp), timed
// in the same passes.
std::vector<double> TimeGemms(const std::vector<GemmShape>& shapes, double* flops,
                              std::vector<double>* best) {
  std::vector<GemmBuffers> bufs;
  *flops = 0;
  for (const GemmShape& g : shapes) {
    bufs.push_back(BuffersFor(g));
    *flops += 2.0 * static_cast<double>(g.m) * g.n * g.k * g.count;
  }
  std::vector<std::vector<double>> runs(shapes.size());
  const bool float_products = InstalledPrecision(Device::kCpu) == "fp32";
  std::vector<std::vector<std::vector<double>>> lib_runs(std::size(kGemmLibraries),
                                                         runs);  // [library][shape][rep]
  for (int rep = 0; rep < 7; ++rep) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      runs[i].push_back(TimeShape(shapes[i], bufs[i]));
      for (size_t l = 0; l < std::size(kGemmLibraries) && float_products; ++l) {
        lib_runs[l][i].push_back(TimeLibraryShape(kGemmLibraries[l], shapes[i], bufs[i]));
      }
    }
  }
  std::vector<double> out;
  best->clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    out.push_back(Median(runs[i]));
    double b = out.back();
    for (auto& lib : lib_runs)
      if (float_products) b = std::min(b, Median(lib[i]));
    best->push_back(b);
  }
  return out;
}

// The step's arithmetic at the best rate on offer per shape: each dense GEMM at the fastest GEMM
// (`times`: per shape the best of shardflow's and the libraries'), each convolution pass at the
// faster of those GEMMs (its im2col GEMMs) and oneDNN's convolution.
double BestTime(Sequential<float>& m, int64_t batch, const std::vector<GemmShape>& shapes,
                const std::vector<double>& times) {
  const std::vector<ConvShape> convs = StepConvs(m);
  std::vector<std::array<double, 3>> by_gemm(convs.size(), {0, 0, 0});
  double best = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& g = shapes[i];
    if (g.conv < 0) {
      best += times[i];
    } else {
      const int pass = g.what[0] == 'f' ? 0 : g.what[1] == 'W' ? 1 : 2;
      by_gemm[static_cast<size_t>(g.conv)][pass] += times[i];
    }
  }
  for (size_t c = 0; c < convs.size(); ++c) {
    const double inf = std::numeric_limits<double>::infinity();
    const std::string precision = InstalledPrecision(Device::kCpu);
    const ConvPassTimes lib = precision == "fp32" ? TimeLibraryConv(convs[c], batch, 7)
                              : precision == "bf16"
                                  ? TimeLibraryConv(convs[c], batch, 7, cpu::ConvData::kBf16)
                                  : ConvPassTimes{inf, inf, inf};
    best += std::min(by_gemm[c][0], lib.fwd) + std::min(by_gemm[c][1], lib.dw) +
            std::min(by_gemm[c][2], lib.dx);
  }
  return best;
}

int RunStep(const std::vector<std::string>& argv) {
  const StepArgs args = ParseArgs(argv);
  cpu::SetIntraOpThreads(args.threads);
  InstallPrecision(Device::kCpu, args.precision);
  for (const std::string& name : args.models) {
    Sequential<float> m(name, {28, 28, 1});
    auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.9}, m.arena().size());
    Tensor x(DType::kFloat32, {args.batch, 28, 28, 1}), y(DType::kInt32, {args.batch}), d;
    for (int64_t i = 0; i < x.num_elements(); ++i)
      x.data<float>()[i] = RandomUniform(1, 0, static_cast<uint64_t>(i));
    for (int64_t i = 0; i < args.batch; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(i % 10);

    const int layers = m.num_layers();
    std::vector<double> fwd(layers, 0.0), bwd(layers, 0.0);
    double loss_time = 0, opt_time = 0, loss = 0;
    const int warmup = 3;
    const int first = FirstTrainable(m);
    std::vector<double> step_times;
    for (int s = 0; s < warmup + args.steps; ++s) {
      if (s == warmup) {
        std::fill(fwd.begin(), fwd.end(), 0.0);
        std::fill(bwd.begin(), bwd.end(), 0.0);
        loss_time = opt_time = 0;
      }
      const auto step_start = Clock::now();
      m.set_step(static_cast<uint64_t>(s));
      m.arena().ZeroGrads();
      const ForwardContext ctx{.training = true, .seed = 42, .step = static_cast<uint64_t>(s)};
      // The model's Forward/Backward loop, unrolled here to time each layer.
      Tensor h = x;
      for (int i = 0; i < layers; ++i) {
        const auto t0 = Clock::now();
        h = m.layer(i).Forward(h, ctx);
        fwd[i] += Seconds(t0, Clock::now());
      }
      auto t0 = Clock::now();
      loss = SoftmaxCrossEntropy<float>(h, y, &d);
      loss_time += Seconds(t0, Clock::now());
      Tensor g = d;
      for (int i = layers - 1; i >= 0; --i) {
        const auto t1 = Clock::now();
        g = m.layer(i).Backward(g, i > first);
        bwd[i] += Seconds(t1, Clock::now());
      }
      t0 = Clock::now();
      opt->Step(m.arena(), 0.01);
      opt_time += Seconds(t0, Clock::now());
      if (s >= warmup) step_times.push_back(Seconds(step_start, Clock::now()));
    }
    const double step_time = Median(step_times);
    if (!std::isfinite(loss)) throw Error(ErrorCode::kInternal, "non-finite loss in " + name);
    const double samples_per_s = static_cast<double>(args.batch) / step_time;

    double gemm_flops = 0;
    const std::vector<GemmShape> shapes = StepGemms(m, args.batch);
    std::vector<double> best_times;
    const std::vector<double> times = TimeGemms(shapes, &gemm_flops, &best_times);
    const double gemm_time = std::accumulate(times.begin(), times.end(), 0.0);
    const double gemm_rate = gemm_flops / gemm_time;
    // The GEMMs are the step's arithmetic (elementwise layers add < 1%): their FLOPs per sample
    // are the training FLOPs, and the limit is the step done at the sgemm rate; the best limit
    // takes oneDNN's convolution where it is faster (issue 25's "best library rate").
    const double train_flops = gemm_flops / static_cast<double>(args.batch);
    const double limit = gemm_rate / train_flops;
    const double best_rate = gemm_flops / BestTime(m, args.batch, shapes, best_times);
    const double best_limit = best_rate / train_flops;

    std::printf(
        "model %s, batch %lld, threads %d, kernels %s, precision %s, %d steps: %.0f samples/s "
        "(%.2f ms/step)\n",
        name.c_str(), static_cast<long long>(args.batch), cpu::IntraOpThreads(), cpu::GemmTarget(),
        Kernels(args.precision).c_str(), args.steps, samples_per_s, 1e3 * step_time);
    std::printf(
        "  training FLOPs/sample %.3g; sgemm on the step's shapes %.1f GFLOP/s -> limit "
        "%.0f samples/s; ratio %.2f (target >= 0.5); achieved %.1f GFLOP/s\n",
        train_flops, gemm_rate / 1e9, limit, samples_per_s / limit,
        samples_per_s * train_flops / 1e9);
    const std::string best_of =
        args.precision == "fp32"
            ? std::string("shardflow's, oneDNN's") +
                  (GemmLibraryBuilt(GemmLibrary::kOpenBlas) ? ", OpenBLAS's" : "") +
                  " GEMM and oneDNN's convolution"
            : "the " + args.precision + " GEMM and oneDNN's " + args.precision + " convolution";
    std::printf(
        "  best of %s per shape %.1f GFLOP/s -> limit %.0f samples/s; ratio %.2f (issue 25: >= "
        "0.8; issue 48: >= 0.7); convolutions: %s\n",
        best_of.c_str(), best_rate / 1e9, best_limit, samples_per_s / best_limit,
        cpu::ConvKernelName(cpu::CurrentConvKernel()));
    std::printf("  %-14s %10s %10s %7s\n", "layer", "fwd ms", "bwd ms", "share");
    double total_layers = loss_time + opt_time;
    for (int i = 0; i < layers; ++i) total_layers += fwd[i] + bwd[i];
    for (int i = 0; i < layers; ++i) {
      std::printf("  %-14s %10.3f %10.3f %6.1f%%\n", m.layer_name(i).c_str(),
                  1e3 * fwd[i] / args.steps, 1e3 * bwd[i] / args.steps,
                  100.0 * (fwd[i] + bwd[i]) / total_layers);
    }
    std::printf("  %-14s %10.3f %10s %6.1f%%\n", "loss", 1e3 * loss_time / args.steps, "",
                100.0 * loss_time / total_layers);
    std::printf("  %-14s %10.3f %10s %6.1f%%\n", "sgd update", 1e3 * opt_time / args.steps, "",
                100.0 * opt_time / total_layers);
    if (args.json) {
      nlohmann::json j = {{"bench", "step"},
                          {"model", name},
                          {"batch", args.batch},
                          {"threads", cpu::IntraOpThreads()},
                          {"precision", args.precision},
                          {"precision_kernels", Kernels(args.precision)},
                          {"steps", args.steps},
                          {"samples_per_s", samples_per_s},
                          {"train_flops_per_sample", train_flops},
                          {"sgemm_gflops", gemm_rate / 1e9},
                          {"limit_samples_per_s", limit},
                          {"ratio_to_limit", samples_per_s / limit},
                          {"best_gflops", best_rate / 1e9},
                          {"best_limit_samples_per_s", best_limit},
                          {"ratio_to_best_limit", samples_per_s / best_limit},
                          {"conv_kernel", cpu::ConvKernelName(cpu::CurrentConvKernel())},
                          {"loss", loss}};
      nlohmann::json per_layer = nlohmann::json::array();
      for (int i = 0; i < layers; ++i) {
        per_layer.push_back({{"layer", m.layer_name(i)},
                             {"fwd_ms", 1e3 * fwd[i] / args.steps},
                             {"bwd_ms", 1e3 * bwd[i] / args.steps}});
      }
      j["layers"] = per_layer;
      std::printf("%s\n", j.dump().c_str());
    }
  }
  return 0;
}

}  // namespace

SHARDFLOW_BENCH("step", "training samples/s of mlp/cnn on the CPU vs the sgemm compute limit",
                RunStep);

}  // namespace shardflow::bench
