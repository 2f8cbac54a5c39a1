#include "core/cpu/onednn_conv.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

#if defined(SHARDFLOW_HAVE_ONEDNN)
#include <omp.h>

#include <array>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "core/cpu/bf16_round.hpp"
#include "core/cpu/build_once.hpp"
#include "core/cpu/onednn_thread.hpp"
#include "core/cpu/parallel.hpp"
#include "core/thread_annotations.hpp"
#endif

namespace shardflow::cpu {
namespace {

ConvKernel KernelFromEnv() {
  const std::string want = env::Text("SHARDFLOW_CONV").value_or("");
  if (want.empty() || want == "auto") return ConvKernel::kAuto;
  if (want == "own") return ConvKernel::kOwn;
  if (want == "onednn") return ConvKernel::kOneDnn;
  if (want == "winograd") return ConvKernel::kWinograd;
  throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_CONV '" + want + "'",
              {.hint = "auto, own, onednn or winograd, or unset for auto"});
}
std::atomic<int> g_kernel{-1};  // -1: not chosen yet (SHARDFLOW_CONV on the first call)

}  // namespace

void SetConvKernel(ConvKernel kernel) { g_kernel = static_cast<int>(kernel); }

ConvKernel CurrentConvKernel() {
  int k = g_kernel.load(std::memory_order_relaxed);
  if (k < 0) {
    k = static_cast<int>(KernelFromEnv());
    int unset = -1;
    if (!g_kernel.compare_exchange_strong(unset, k)) k = unset;
  }
  return static_cast<ConvKernel>(k);
}

const char* ConvKernelName(ConvKernel kernel) {
  switch (kernel) {
    case ConvKernel::kAuto:
      return "auto";
    case ConvKernel::kOwn:
      return "own";
    case ConvKernel::kOneDnn:
      return "onednn";
    case ConvKernel::kWinograd:
      return "winograd";
  }
  return "?";
}

const char* ConvPassName(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "forward";
    case ConvPass::kBackwardData:
      return "backward data";
    case ConvPass::kBackwardFilter:
      return "backward filter";
  }
  return "?";
}

#if !defined(SHARDFLOW_HAVE_ONEDNN)

bool OneDnnBuilt() { return false; }
bool LibraryConvTakes(const ConvGeometry&, int64_t, int64_t, ConvPass, std::string* impl,
                      ConvData) {
  if (impl != nullptr) impl->clear();
  return false;
}
bool LibraryConvForward(const ConvGeometry&, int64_t, int64_t, const float*, const float*,
                        const float*, float*, ConvData) {
  return false;
}
bool LibraryConvBackwardData(const ConvGeometry&, int64_t, int64_t, const float*, const float*,
                             float*, ConvData) {
  return false;
}
bool LibraryConvBackwardFilter(const ConvGeometry&, int64_t, int64_t, const float*, const float*,
                               float*, ConvData) {
  return false;
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

memory::data_type TypeOf(ConvData data) {
  return data == ConvData::kBf16 ? memory::data_type::bf16 : kF32;
}

// One pass of one convolution on n images, built once.
struct Prim {
  dnnl::primitive prim;
  memory::desc image, out, weights;  // x or dx; y or dy; the kernel as the primitive wants it
                                     // (x, dy and the kernel in bf16 for ConvData::kBf16)
  memory::desc bias;                 // forward with bias only
  memory::desc user_weights;         // (KH, KW, C, F)
  dnnl::primitive weights_reorder;   // user -> weights (forward, backward data), or
                                     // weights -> user with dw += (backward filter)
  bool reorder = false;
  size_t scratch = 0, reorder_scratch = 0;
  std::string impl;
  bool direct = false;
};

using Key = std::array<int64_t, 14>;

int64_t PadAfter(int64_t in, int64_t k, int64_t out, int64_t before, int64_t stride) {
  return std::max<int64_t>((out - 1) * stride + k - in - before, 0);
}

dnnl::primitive_attr UserScratch() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

template <typename Primitive, typename PD>
void Finish(Prim& p, const PD& pd, const memory::desc& weights) {
  p.prim = Primitive(pd);
  p.weights = weights;
  p.scratch = pd.scratchpad_desc().get_size();
  p.impl = pd.impl_info_str();
  p.direct = p.impl.find("gemm") == std::string::npos;
}

std::shared_ptr<Prim> Build(const ConvGeometry& g, int64_t f, int64_t n, ConvPass pass, bool bias,
                            ConvData data) {
  auto p = std::make_shared<Prim>();
  const memory::data_type in = TypeOf(data);  // of x, dy and the kernel
  const memory::dims strides{g.stride, g.stride}, before{g.pad_top, g.pad_left},
      after{PadAfter(g.h, g.kh, g.oh, g.pad_top, g.stride),
            PadAfter(g.w, g.kw, g.ow, g.pad_left, g.stride)};
  const memory::dims wdims{f, g.c, g.kh, g.kw};
  const memory::desc x({n, g.c, g.h, g.w}, in, Tag::nhwc), y({n, f, g.oh, g.ow}, kF32, Tag::nhwc);
  const memory::desc dx({n, g.c, g.h, g.w}, kF32, Tag::nhwc), dy({n, f, g.oh, g.ow}, in, Tag::nhwc);
  p->image = pass == ConvPass::kBackwardData ? dx : x;
  p->out = pass == ConvPass::kForward ? y : dy;
  p->user_weights = memory::desc(wdims, kF32, Tag::hwio);
  const memory::desc any(wdims, in, Tag::any), any_dw(wdims, kF32, Tag::any);
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto training = dnnl::prop_kind::forward_training;
  dnnl::engine& eng = OneDnnEngine();
  const dnnl::primitive_attr attr = UserScratch();
  // The forward descriptor: the primitive of the forward pass, the hint of the backward ones.
  const auto fwd =
      bias ? dnnl::convolution_forward::desc(
                 training, algo, x, any, memory::desc({f}, kF32, Tag::a), y, strides, before, after)
           : dnnl::convolution_forward::desc(training, algo, x, any, y, strides, before, after);
  const dnnl::convolution_forward::primitive_desc fpd(fwd, attr, eng);
  dnnl::primitive_attr rattr = UserScratch();
  memory::desc reorder_from = p->user_weights, reorder_to;
  switch (pass) {
    case ConvPass::kForward:
      if (bias) p->bias = fpd.bias_desc();
      Finish<dnnl::convolution_forward>(*p, fpd, fpd.weights_desc());
      reorder_to = fpd.weights_desc();
      break;
    case ConvPass::kBackwardData: {
      const dnnl::convolution_backward_data::desc d(algo, dx, any, dy, strides, before, after);
      const dnnl::convolution_backward_data::primitive_desc pd(d, attr, eng, fpd);
      Finish<dnnl::convolution_backward_data>(*p, pd, pd.weights_desc());
      reorder_to = pd.weights_desc();
      break;
    }
    case ConvPass::kBackwardFilter: {
      const dnnl::convolution_backward_weights::desc d(algo, x, any_dw, dy, strides, before, after);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, eng, fpd);
      Finish<dnnl::convolution_backward_weights>(*p, pd, pd.diff_weights_desc());
      // dw += reorder(piece's dw): a sum post-op accumulates into shardflow's gradient.
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      rattr.set_post_ops(sum);
      reorder_from = pd.diff_weights_desc();
      reorder_to = p->user_weights;
      break;
    }
  }
  p->reorder = pass == ConvPass::kBackwardFilter || reorder_from != reorder_to;
  if (p->reorder) {
    const dnnl::reorder::primitive_desc rpd(eng, reorder_from, eng, reorder_to, rattr);
    p->weights_reorder = dnnl::reorder(rpd);
    p->reorder_scratch = rpd.scratchpad_desc().get_size();
  }
  return p;
}

class Cache {
 public:
  // The primitive for (g, f, n, pass, bias); nullptr when oneDNN cannot build one.
  std::shared_ptr<const Prim> Get(const ConvGeometry& g, int64_t f, int64_t n, ConvPass pass,
                                  bool bias, ConvData data) {
    const Key key{g.h,
                  g.w,
                  g.c,
                  g.kh,
                  g.kw,
                  g.stride,
                  g.pad_top,
                  g.pad_left,
                  g.oh,
                  g.ow,
                  f,
                  n * 4 + static_cast<int64_t>(pass),
                  bias ? 1 : 0,
                  static_cast<int64_t>(data)};
    return prims_.Get(key, [&]() -> std::shared_ptr<Prim> {
      try {
        std::shared_ptr<Prim> p = Build(g, f, n, pass, bias, data);
        SF_LOG(Debug) << "oneDNN convolution " << g.h << "x" << g.w << "x" << g.c << " " << g.kh
                      << "x" << g.kw << "/" << g.stride << " -> " << f << ", " << n << " images, "
                      << ConvPassName(pass) << (data == ConvData::kBf16 ? " in bf16" : "") << ": "
                      << p->impl;
        return p;
      } catch (const dnnl::error& e) {
        SF_LOG(Debug) << "oneDNN has no " << ConvPassName(pass) << " convolution for " << g.h << "x"
                      << g.w << "x" << g.c << " -> " << f << ": " << e.what();
        return nullptr;
      }
    });
  }

 private:
  BuildOnce<Key, Prim> prims_;
};

Cache& Prims() {
  static Cache* cache = new Cache();  // never destroyed: pool threads may outlive statics
  return *cache;
}

// The pieces of a call: images [i * per, min(batch, (i + 1) * per)).
struct Pieces {
  int64_t per, count, last;
  explicit Pieces(int64_t batch)
      : per(std::min(batch, kImagesPerPiece)),
        count((batch + per - 1) / per),
        last(batch - (count - 1) * per) {}
  int64_t images(int64_t i) const { return i + 1 < count ? per : last; }
};

bool Takes(const ConvGeometry& g, int64_t f, int64_t batch, ConvPass pass, bool bias, ConvData data,
           std::string* impl) {
  if (impl != nullptr) impl->clear();
  const ConvKernel kernel = CurrentConvKernel();
  if (kernel == ConvKernel::kOwn || kernel == ConvKernel::kWinograd || batch <= 0) return false;
  const Pieces pc(batch);
  std::shared_ptr<const Prim> p = Prims().Get(g, f, pc.per, pass, bias, data);
  if (p == nullptr ||
      (pc.last != pc.per && Prims().Get(g, f, pc.last, pass, bias, data) == nullptr)) {
    return false;
  }
  if (impl != nullptr) *impl = p->impl;
  if (kernel == ConvKernel::kOneDnn || data == ConvData::kBf16) return true;
  return p->direct && (pass != ConvPass::kBackwardData || g.c >= kMinLibraryDataChannels);
}

// The primitives of a call's pieces: all but the last take `per` images.
struct CallPrims {
  std::shared_ptr<const Prim> full, last;
  CallPrims(const ConvGeometry& g, int64_t f, const Pieces& pc, ConvPass pass, bool bias,
            ConvData data)
      : full(Prims().Get(g, f, pc.per, pass, bias, data)),
        last(Prims().Get(g, f, pc.last, pass, bias, data)) {}
  const Prim& of(const Pieces& pc, int64_t i) const { return i + 1 < pc.count ? *full : *last; }
};

// Runs the pass on every piece: args_of(prim, piece, first image) gives its arguments.
template <typename ArgsFn>
void RunOnPieces(const CallPrims& prims, const Pieces& pc, const ArgsFn& args_of) {
  RunPieces(pc.count, [&](int64_t i) {
    const Prim& p = prims.of(pc, i);
    std::unordered_map<int, memory> args = args_of(p, i, pc.per * i);
    OneDnnThread& t = ThisOneDnnThread();
    dnnl::stream& s = t.Stream();
    if (p.scratch > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   memory({{static_cast<int64_t>(p.scratch)}, memory::data_type::u8, Tag::a},
                          OneDnnEngine(), t.Bytes(p.scratch)));
    }
    p.prim.execute(s, args);
    s.wait();
  });
}

// The kernel in a primitive's layout: w itself, or a reordered copy in `buffer`.
const float* WeightsFor(const Prim& p, const float* w, std::vector<float>& buffer) {
  if (!p.reorder) return w;
  buffer.resize(p.weights.get_size() / sizeof(float) + 1);
  OneDnnThread& t = ThisOneDnnThread();
  dnnl::stream& s = t.Stream();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_FROM, memory(p.user_weights, OneDnnEngine(), const_cast<float*>(w))},
      {DNNL_ARG_TO, memory(p.weights, OneDnnEngine(), buffer.data())}};
  if (p.reorder_scratch > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory({{static_cast<int64_t>(p.reorder_scratch)}, memory::data_type::u8, Tag::a},
                        OneDnnEngine(), t.Bytes(p.reorder_scratch)));
  }
  p.weights_reorder.execute(s, args);
  s.wait();
  return buffer.data();
}

float* Mutable(const float* p) { return const_cast<float*>(p); }  // oneDNN reads inputs only

// An input of a piece as the primitive reads it: the n floats at x, or for bf16 a copy rounded
// into the calling thread's slot.
void* Input(const float* x, int64_t n, ConvData data, int slot) {
  if (data == ConvData::kFloat) return Mutable(x);
  uint16_t* out = ThisOneDnnThread().Halves(slot, static_cast<size_t>(n));
  bf16::RoundRows(x, 1, n, n, out);
  return out;
}

// The kernel reordered once per call for the full pieces' primitive, and once more for the last
// piece's when that one wants another layout.
class KernelCopies {
 public:
  KernelCopies(const CallPrims& prims, const float* w)
      : full_(WeightsFor(*prims.full, w, full_buf_)),
        last_(prims.last->weights == prims.full->weights ? full_
                                                         : WeightsFor(*prims.last, w, last_buf_)) {}
  const float* For(const CallPrims& prims, const Prim& p) const {
    return &p == prims.full.get() ? full_ : last_;
  }

 private:
  std::vector<float> full_buf_, last_buf_;
  const float* full_;
  const float* last_;
};

}  // namespace

bool OneDnnBuilt() { return true; }

bool LibraryConvTakes(const ConvGeometry& g, int64_t f, int64_t batch, ConvPass pass,
                      std::string* impl, ConvData data) {
  return Takes(g, f, batch, pass, false, data, impl);
}

bool LibraryConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                        const float* w, const float* bias, float* y, ConvData data) {
  const bool with_bias = bias != nullptr;
  if (!Takes(g, f, batch, ConvPass::kForward, with_bias, data, nullptr)) return false;
  const Pieces pc(batch);
  const CallPrims prims(g, f, pc, ConvPass::kForward, with_bias, data);
  const KernelCopies wp(prims, w);
  const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * f;
  RunOnPieces(prims, pc, [&](const Prim& p, int64_t i, int64_t at) {
    std::unordered_map<int, memory> a{
        {DNNL_ARG_SRC, memory(p.image, OneDnnEngine(),
                              Input(x + at * in_image, pc.images(i) * in_image, data, 0))},
        {DNNL_ARG_WEIGHTS, memory(p.weights, OneDnnEngine(), Mutable(wp.For(prims, p)))},
        {DNNL_ARG_DST, memory(p.out, OneDnnEngine(), y + at * out_image)}};
    if (with_bias) a.emplace(DNNL_ARG_BIAS, memory(p.bias, OneDnnEngine(), Mutable(bias)));
    return a;
  });
  return true;
}

bool LibraryConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const float* dy,
                             const float* w, float* dx, ConvData data) {
  if (!Takes(g, f, batch, ConvPass::kBackwardData, false, data, nullptr)) return false;
  const Pieces pc(batch);
  const CallPrims prims(g, f, pc, ConvPass::kBackwardData, false, data);
  const KernelCopies wp(prims, w);
  const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * f;
  RunOnPieces(prims, pc, [&](const Prim& p, int64_t i, int64_t at) {
    return std::unordered_map<int, memory>{
        {DNNL_ARG_DIFF_DST, memory(p.out, OneDnnEngine(),
                                   Input(dy + at * out_image, pc.images(i) * out_image, data, 0))},
        {DNNL_ARG_WEIGHTS, memory(p.weights, OneDnnEngine(), Mutable(wp.For(prims, p)))},
        {DNNL_ARG_DIFF_SRC, memory(p.image, OneDnnEngine(), dx + at * in_image)}};
  });
  return true;
}

bool LibraryConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                               const float* dy, float* dw, ConvData data) {
  if (!Takes(g, f, batch, ConvPass::kBackwardFilter, false, data, nullptr)) return false;
  const Pieces pc(batch);
  const CallPrims prims(g, f, pc, ConvPass::kBackwardFilter, false, data);
  // Each piece's kernel gradient in its primitive's layout, then dw += each, in piece order.
  const size_t piece_floats =
      std::max(prims.full->weights.get_size(), prims.last->weights.get_size()) / sizeof(float) + 1;
  std::vector<float> partial(piece_floats * static_cast<size_t>(pc.count));
  float* parts = partial.data();
  const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * f;
  RunOnPieces(prims, pc, [&](const Prim& p, int64_t i, int64_t at) {
    return std::unordered_map<int, memory>{
        {DNNL_ARG_SRC, memory(p.image, OneDnnEngine(),
                              Input(x + at * in_image, pc.images(i) * in_image, data, 0))},
        {DNNL_ARG_DIFF_DST, memory(p.out, OneDnnEngine(),
                                   Input(dy + at * out_image, pc.images(i) * out_image, data, 1))},
        {DNNL_ARG_DIFF_WEIGHTS, memory(p.weights, OneDnnEngine(), parts + i * piece_floats)}};
  });
  OneDnnThread& t = ThisOneDnnThread();
  dnnl::stream& s = t.Stream();
  for (int64_t i = 0; i < pc.count; ++i) {
    const Prim& p = prims.of(pc, i);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_FROM, memory(p.weights, OneDnnEngine(), parts + i * piece_floats)},
        {DNNL_ARG_TO, memory(p.user_weights, OneDnnEngine(), dw)}};
    if (p.reorder_scratch > 0) {
      args.emplace(
          DNNL_ARG_SCRATCHPAD,
          memory({{static_cast<int64_t>(p.reorder_scratch)}, memory::data_type::u8, Tag::a},
                 OneDnnEngine(), t.Bytes(p.reorder_scratch)));
    }
    p.weights_reorder.execute(s, args);
  }
  s.wait();
  return true;
}

#endif  // SHARDFLOW_HAVE_ONEDNN

}  // namespace shardflow::cpu
