// shardflow-bench transformer: training throughput of a GPT-style language model on the CPU, and
// the activation memory of attention as the context grows (issue 50).
//
//   shardflow-bench transformer [--layers 6] [--dim 384] [--heads 6] [--time 256] [--vocab 65]
//                               [--batch 8] [--threads 1] [--steps 5] [--memory] [--json]
//
// The model is nanoGPT's character-level Shakespeare configuration by default (6 pre-LN blocks
// of 384 features and 6 heads, a 256-token context, 65 symbols): tokens:V:D, L x block:H:causal,
// layernorm, dense:V, trained with next-token cross-entropy and Adam on random token ids.
// Tokens/s = batch * time / the median step (forward, loss, backward, update) over --steps
// steps after 2 warm-up steps; the table breaks the step down by layer. bench/transformer.sh
// runs it beside the PyTorch peer (bench/peers/torch_transformer.py, the same model) on the
// same cores.
//
// --memory: one attention:H:causal layer at batch 1 and T = --time (D and H from the flags): the
// growth of the process's peak resident memory over a forward and backward pass (VmHWM, reset
// through /proc/self/clear_refs before the pass), beside the bytes the T x T probabilities of
// every head would take if they were kept (arithmetic, not measured). bench/transformer.sh runs
// T = 512, 1024 and 2048, each in its own process: linear growth doubles with T, not quadruples.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/mpi_env.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"

namespace shardflow::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct TransformerArgs {
  int64_t layers = 6, dim = 384, heads = 6, time = 256, vocab = 65, batch = 8;
  int threads = 1, steps = 5;
  bool memory = false, json = false;
};

TransformerArgs ParseArgs(const std::vector<std::string>& args) {
  TransformerArgs a;
  for (FlagCursor f(args, "transformer"); f.Next();) {
    if (f.IsHelp()) {
      std::printf(
          "usage: shardflow-bench transformer [--layers 6] [--dim 384] [--heads 6] [--time 256]\n"
          "                                   [--vocab 65] [--batch 8] [--threads 1] [--steps 5]\n"
          "                                   [--memory] [--json]\n");
      throw EarlyExit{0};
    }
    if (f.Is("--layers")) {
      a.layers = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--dim")) {
      a.dim = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--heads")) {
      a.heads = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--time")) {
      a.time = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--vocab")) {
      a.vocab = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--batch")) {
      a.batch = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--threads")) {
      a.threads = static_cast<int>(ParsePositive(f.flag(), f.Value()));
    } else if (f.Is("--steps")) {
      a.steps = static_cast<int>(ParsePositive(f.flag(), f.Value()));
    } else if (f.Is("--memory")) {
      a.memory = true;
    } else if (f.Is("--json")) {
      a.json = true;
    } else {
      f.Unknown();
    }
  }
  return a;
}

std::string ModelSpec(const TransformerArgs& a) {
  std::string spec = "tokens:" + std::to_string(a.vocab) + ":" + std::to_string(a.dim);
  for (int64_t i = 0; i < a.layers; ++i) spec += ", block:" + std::to_string(a.heads) + ":causal";
  return spec + ", layernorm, dense:" + std::to_string(a.vocab);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Token ids in [0, vocab): the inputs as floats (the model's input dtype), the labels as int32.
void RandomTokens(const TransformerArgs& a, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kFloat32, {a.batch, a.time});
  *y = Tensor(DType::kInt32, {a.batch, a.time});
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    const auto id = static_cast<int32_t>(RandomUniform(5, 0, static_cast<uint64_t>(i)) *
                                         static_cast<double>(a.vocab));
    x->data<float>()[i] = static_cast<float>(id);
    y->data<int32_t>()[(i + x->num_elements() - 1) % x->num_elements()] = id;  // the next token
  }
}

int RunThroughput(const TransformerArgs& a) {
  Sequential<float> m(ModelSpec(a), {a.time}, {.init = InitKind::kGlorotUniform});
  auto opt = MakeOptimizer({.name = "adam"}, m.arena().size());
  Tensor x, y, d;
  RandomTokens(a, &x, &y);
  const int layers = m.num_layers();
  std::vector<double> fwd(layers, 0.0), bwd(layers, 0.0), steps;
  double loss = 0, loss_time = 0, opt_time = 0;
  const int warmup = 2;
  for (int s = 0; s < warmup + a.steps; ++s) {
    if (s == warmup) {
      std::fill(fwd.begin(), fwd.end(), 0.0);
      std::fill(bwd.begin(), bwd.end(), 0.0);
      loss_time = opt_time = 0;
    }
    const auto start = Clock::now();
    m.arena().ZeroGrads();
    const ForwardContext ctx{.training = true, .seed = 42, .step = static_cast<uint64_t>(s)};
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
      g = m.layer(i).Backward(g, i > 0);
      bwd[i] += Seconds(t1, Clock::now());
    }
    t0 = Clock::now();
    opt->Step(m.arena(), 1e-3);
    opt_time += Seconds(t0, Clock::now());
    if (s >= warmup) steps.push_back(Seconds(start, Clock::now()));
  }
  if (!std::isfinite(loss)) throw Error(ErrorCode::kInternal, "non-finite loss in the transformer");
  const double step = Median(steps);
  const double tokens_per_s = static_cast<double>(a.batch * a.time) / step;
  const double flops = 3.0 * static_cast<double>(m.FlopsPerSample()) / static_cast<double>(a.time);
  std::printf("transformer: %s\n  %lld parameters, batch %lld x %lld tokens, %d thread(s), %s\n",
              ModelSpec(a).c_str(), static_cast<long long>(m.arena().size()),
              static_cast<long long>(a.batch), static_cast<long long>(a.time), a.threads,
              cpu::GemmTarget());
  std::printf(
      "  %.0f tokens/s (median step %.3f s over %d), loss %.3f, %.1f GFLOP/s (%.1f "
      "MFLOP/token, training = 3x forward)\n",
      tokens_per_s, step, a.steps, loss, flops * tokens_per_s / 1e9, flops / 1e6);
  const double n = static_cast<double>(a.steps);
  for (int i = 0; i < layers; ++i) {
    std::printf("  %-24s forward %7.1f ms  backward %7.1f ms\n", m.layer(i).Describe().c_str(),
                1e3 * fwd[i] / n, 1e3 * bwd[i] / n);
  }
  std::printf("  %-24s %7.1f ms; optimizer %.1f ms\n", "loss", 1e3 * loss_time / n,
              1e3 * opt_time / n);
  if (a.json) {
    nlohmann::json j = {{"bench", "transformer"},
                        {"tokens_per_s", tokens_per_s},
                        {"step_s", step},
                        {"layers", a.layers},
                        {"dim", a.dim},
                        {"heads", a.heads},
                        {"time", a.time},
                        {"vocab", a.vocab},
                        {"batch", a.batch},
                        {"threads", a.threads},
                        {"loss", loss},
                        {"parameters", m.arena().size()},
                        {"flops_per_token", flops}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

// The process's peak resident memory (VmHWM) and current (VmRSS), bytes.
int64_t StatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size())) * 1024;
  }
  throw Error(ErrorCode::kIo, std::string("no ") + field + " in /proc/self/status");
}

void ResetPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  if (!out.flush()) {
    throw Error(ErrorCode::kIo, "cannot reset the peak RSS through /proc/self/clear_refs");
  }
}

// One pass forward and backward of attention:H:causal on (1, t, D); returns the growth of the
// peak resident memory over it when `measure`.
int64_t AttentionPass(const TransformerArgs& a, int64_t t, bool measure) {
  Sequential<float> m("attention:" + std::to_string(a.heads) + ":causal", {t, a.dim});
  Tensor x(DType::kFloat32, {1, t, a.dim}), dy(DType::kFloat32, {1, t, a.dim});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>(RandomNormal(1, 0, static_cast<uint64_t>(i)));
    dy.data<float>()[i] = static_cast<float>(RandomNormal(1, 1, static_cast<uint64_t>(i)));
  }
  const int64_t before = StatusBytes("VmRSS");
  if (measure) ResetPeak();
  m.arena().ZeroGrads();
  MicroBatch mb;
  m.Forward(x, true, mb);
  m.BackwardWithInputGrad(dy, mb);
  return StatusBytes("VmHWM") - before;
}

// In a fresh process per T (bench/transformer.sh runs T = 512, 1024, 2048): memory freed by an
// earlier pass would stay resident and hide a later one's growth.
int RunMemory(const TransformerArgs& a) {
  AttentionPass(a, 64, false);  // one-time set-up (thread pool, oneDNN) before the measured pass
  const int64_t growth = AttentionPass(a, a.time, true);
  const double kept_probs = 4.0 * static_cast<double>(a.heads) * static_cast<double>(a.time) *
                            static_cast<double>(a.time);
  std::printf(
      "attention memory: attention:%lld:causal on (1, %lld, %lld), forward + backward: peak "
      "grew %.1f MiB (the T x T probabilities of %lld heads would be %.1f MiB, "
      "arithmetic)\n",
      static_cast<long long>(a.heads), static_cast<long long>(a.time),
      static_cast<long long>(a.dim), static_cast<double>(growth) / (1 << 20),
      static_cast<long long>(a.heads), kept_probs / (1 << 20));
  if (a.json) {
    nlohmann::json j = {{"bench", "attention_memory"},
                        {"time", a.time},
                        {"dim", a.dim},
                        {"heads", a.heads},
                        {"peak_growth_bytes", growth},
                        {"kept_probabilities_bytes", kept_probs}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

int RunTransformer(const std::vector<std::string>& argv) {
  const TransformerArgs a = ParseArgs(argv);
  cpu::SetIntraOpThreads(a.threads);
  return a.memory ? RunMemory(a) : RunThroughput(a);
}

}  // namespace

SHARDFLOW_BENCH("transformer", "GPT-style LM training tokens/s; attention memory vs context",
                RunTransformer);

}  // namespace shardflow::bench
