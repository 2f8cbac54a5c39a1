#include "apps/bench/step_gemms.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/backend/backend.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/error.hpp"
#include "core/layers/conv2d.hpp"

namespace shardflow::bench {

int FirstTrainable(const Sequential<float>& m) {
  int first = m.num_layers();
  for (const ParamSpec& s : m.arena().specs()) first = std::min(first, s.layer);
  return first;
}

namespace {
bool IsKernel(const std::string& name) {
  return name == "kernel" || (name.size() > 7 && name.compare(name.size() - 7, 7, "/kernel") == 0);
}
}  // namespace

// A residual block's convolutions all end at the block's output size; conv2 starts there too.
std::vector<ConvShape> StepConvs(Sequential<float>& m) {
  std::vector<ConvShape> out;
  const int first = FirstTrainable(m);
  for (const ParamSpec& s : m.arena().specs()) {
    if (!IsKernel(s.name) || s.shape.size() != 4) continue;
    const Shape& o = m.layer_output_shape(s.layer);
    const Shape& in = s.name == "conv2/kernel" ? o
                      : s.layer == 0           ? m.input_shape()
                                               : m.layer_output_shape(s.layer - 1);
    const int64_t stride = (in[0] + o[0] - 1) / o[0];
    out.push_back({s.layer, s.name,
                   MakeConvGeometry(in[0], in[1], s.shape[2], s.shape[0], s.shape[1], stride, true),
                   s.shape[3], s.layer > first});
  }
  return out;
}

std::vector<GemmShape> StepGemms(Sequential<float>& m, int64_t batch) {
  std::vector<GemmShape> out;
  const int first = FirstTrainable(m);
  int conv = -1;
  for (const ParamSpec& s : m.arena().specs()) {
    if (!IsKernel(s.name)) continue;
    if (s.shape.size() == 4) ++conv;
    const Shape& out_shape = m.layer_output_shape(s.layer);
    int64_t k = 0, n = 0;
    if (s.shape.size() == 4) {
      k = s.shape[0] * s.shape[1] * s.shape[2];
      n = s.shape[3];
    } else if (s.shape.size() == 2) {
      k = s.shape[0];
      n = s.shape[1];
    } else {
      continue;
    }
    // A dense kernel's rows: the layer output's rows (a transformer block's inner kernels have
    // other widths than the block's output, but as many rows).
    const int64_t rows_per_sample = s.shape.size() == 4 ? NumElements(out_shape) / n
                                                        : NumElements(out_shape) / out_shape.back();
    // Convolutions: whole chunks of images, then the rest.
    int64_t chunk = batch;
    if (s.shape.size() == 4) {
      chunk = std::clamp<int64_t>(kDefaultIm2ColBudget / std::max<int64_t>(rows_per_sample * k, 1),
                                  1, batch);
    }
    const int64_t full = batch / chunk, rest = batch % chunk;
    for (const auto& [images, count] : {std::pair{chunk, full}, std::pair{rest, int64_t{1}}}) {
      if (images == 0 || count == 0) continue;
      const int64_t rows = images * rows_per_sample;
      const int c = s.shape.size() == 4 ? conv : -1;
      out.push_back({false, false, rows, n, k, count, "fwd", s.layer, c});  // y = x W
      out.push_back({true, false, k, n, rows, count, "dW", s.layer, c});    // x^T dy
      // dy W^T: a convolution transposes W once per pass and reads it in place.
      const bool tb = s.shape.size() != 4;
      if (s.layer > first) out.push_back({false, tb, rows, k, n, count, "dx", s.layer, c});
    }
  }
  return out;
}

GemmBuffers BuffersFor(const GemmShape& g) {
  const int64_t ar = g.ta ? g.k : g.m, ac = g.ta ? g.m : g.k;
  const int64_t br = g.tb ? g.n : g.k, bc = g.tb ? g.k : g.n;
  GemmBuffers buf{std::vector<float>(ar * ac), std::vector<float>(br * bc),
                  std::vector<float>(g.m * g.n)};
  // Patterns of periods 7 and 5 (exact in float): a transposed, swapped or mis-strided operand
  // gives other sums than the reference's.
  for (size_t i = 0; i < buf.a.size(); ++i) buf.a[i] = 0.125f * static_cast<float>(i % 7) - 0.375f;
  for (size_t i = 0; i < buf.b.size(); ++i) buf.b[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  return buf;
}

namespace {
// C's elements at a few places against a double-precision dot product of op(A) and op(B).
void CheckC(const GemmShape& g, const GemmBuffers& buf) {
  const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
  const std::pair<int64_t, int64_t> at[] = {
      {0, 0}, {g.m - 1, g.n - 1}, {g.m / 2, g.n / 3}, {g.m / 3, g.n - 1}};
  for (const auto& [i, j] : at) {
    double ref = 0, scale = 1e-6;
    for (int64_t kk = 0; kk < g.k; ++kk) {
      const double a = g.ta ? buf.a[kk * lda + i] : buf.a[i * lda + kk];
      const double b = g.tb ? buf.b[j * ldb + kk] : buf.b[kk * ldb + j];
      ref += a * b;
      scale += std::abs(a * b);
    }
    if (std::abs(buf.c[i * g.n + j] - ref) > 1e-5 * scale) {
      throw Error(ErrorCode::kInternal, "GEMM result check failed in the benchmark at (" +
                                            std::to_string(i) + ", " + std::to_string(j) + ")");
    }
  }
}
}  // namespace

namespace {
// Times g.count calls of call(), then checks C (CheckC).
template <typename Call>
double TimeCalls(const GemmShape& g, GemmBuffers& buf, const Call& call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < g.count; ++i) call();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CheckC(g, buf);
  return s;
}
}  // namespace

double TimeShape(const GemmShape& g, GemmBuffers& buf) {
  return TimeCalls(g, buf, [&] {
    BackendFor<float>(Device::kCpu)
        .Gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, buf.a.data(), g.ta ? g.m : g.k, buf.b.data(),
              g.tb ? g.k : g.n, 0.0f, buf.c.data(), g.n);
  });
}

double TimeLibraryShape(GemmLibrary lib, const GemmShape& g, GemmBuffers& buf) {
  if (!GemmLibraryBuilt(lib)) return std::numeric_limits<double>::infinity();
  return TimeCalls(g, buf, [&] {
    LibrarySgemm(lib, cpu::IntraOpThreads(), g.ta, g.tb, g.m, g.n, g.k, 1.0f, buf.a.data(),
                 g.ta ? g.m : g.k, buf.b.data(), g.tb ? g.k : g.n, 0.0f, buf.c.data(), g.n);
  });
}

ConvPassTimes TimeLibraryConv(const ConvShape& c, int64_t batch, int reps, cpu::ConvData data) {
  const double inf = std::numeric_limits<double>::infinity();
  ConvPassTimes t{inf, inf, inf};
  if (!cpu::OneDnnBuilt()) return t;
  const ConvGeometry& g = c.g;
  std::vector<float> x(batch * g.h * g.w * g.c, 0.5f), w(g.kh * g.kw * g.c * c.filters, 0.25f),
      bias(c.filters, 0.0f), y(batch * g.oh * g.ow * c.filters), dw(w.size());
  const cpu::ConvKernel before = cpu::CurrentConvKernel();
  cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
  auto median = [&](auto&& fn) {
    std::vector<double> v;
    for (int r = 0; r <= reps; ++r) {  // the first run builds the primitive
      const auto t0 = std::chrono::steady_clock::now();
      if (!fn()) return inf;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) v.push_back(s);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  t.fwd = median([&] {
    return cpu::LibraryConvForward(g, c.filters, batch, x.data(), w.data(), bias.data(), y.data(),
                                   data);
  });
  t.dw = median([&] {
    return cpu::LibraryConvBackwardFilter(g, c.filters, batch, x.data(), y.data(), dw.data(), data);
  });
  if (c.need_dx) {
    t.dx = median([&] {
      return cpu::LibraryConvBackwardData(g, c.filters, batch, y.data(), w.data(), x.data(), data);
    });
  }
  cpu::SetConvKernel(before);
  return t;
}

}  // namespace shardflow::bench
