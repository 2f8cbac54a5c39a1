#include "core/cuda/cudnn_conv.hpp"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>

#include "core/backend/kernel_backend.hpp"
#include "core/cuda/check_cuda.hpp"
#include "core/cuda/cudnn_handle.cuh"
#include "core/cuda/device_exec.cuh"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::cuda {

CudnnConvShape PlanCudnnConv(const ConvGeometry& g, int64_t f, int64_t batch) {
  CudnnConvShape s;
  const int64_t pb = (g.oh - 1) * g.stride + g.kh - g.h - g.pad_top;
  const int64_t pr = (g.ow - 1) * g.stride + g.kw - g.w - g.pad_left;
  const int64_t eh = pb > g.pad_top ? pb - g.pad_top : 0,
                ew = pr > g.pad_left ? pr - g.pad_left : 0;
  if (batch <= 0 || f <= 0 || g.c <= 0) {
    s.why = "an empty batch or channel count";
    return s;
  }
  // cuDNN's legacy descriptors take int sizes and refuse a tensor of more than INT_MAX
  // elements (cudnnSetTensor4dDescriptor: NOT_SUPPORTED), so a larger one stays on im2col.
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  const int64_t largest = std::max({batch, g.c, g.h + eh, g.w + ew, f, g.kh, g.kw, g.oh, g.ow});
  const double in = static_cast<double>(batch) * g.c * (g.h + eh) * (g.w + ew);
  const double out = static_cast<double>(batch) * f * g.oh * g.ow;
  const double filter = static_cast<double>(f) * g.kh * g.kw * g.c;
  if (largest > kMax || std::max({in, out, filter}) > static_cast<double>(kMax)) {
    s.why = "a tensor beyond cuDNN's int range";
    return s;
  }
  s = CudnnConvShape{.usable = true,
                     .n = static_cast<int>(batch),
                     .c = static_cast<int>(g.c),
                     .h = static_cast<int>(g.h + eh),
                     .w = static_cast<int>(g.w + ew),
                     .f = static_cast<int>(f),
                     .kh = static_cast<int>(g.kh),
                     .kw = static_cast<int>(g.kw),
                     .stride = static_cast<int>(g.stride),
                     .pad_h = static_cast<int>(g.pad_top),
                     .pad_w = static_cast<int>(g.pad_left),
                     .eh = static_cast<int>(eh),
                     .ew = static_cast<int>(ew),
                     .oh = static_cast<int>(g.oh),
                     .ow = static_cast<int>(g.ow)};
  // cuDNN's output size, floor((in + 2 pad - k) / stride) + 1, must be ours.
  const int64_t oh = (s.h + 2 * s.pad_h - s.kh) / s.stride + 1;
  const int64_t ow = (s.w + 2 * s.pad_w - s.kw) / s.stride + 1;
  if (oh != g.oh || ow != g.ow) {
    s.usable = false;
    s.why = "padding cuDNN cannot express";
  }
  return s;
}

namespace {

template <typename T>
constexpr cudnnDataType_t kType = std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;

// The four descriptors of one shape and dtype.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const CudnnConvShape& s, cudnnDataType_t type) {
    try {
      Make(s, type);
    } catch (...) {  // the ones already created
      Destroy();
      throw;
    }
  }
  ~Descriptors() { Destroy(); }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

 private:
  void Make(const CudnnConvShape& s, cudnnDataType_t type) {
    SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
    SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
    SF_CHECK_CUDNN(cudnnCreateFilterDescriptor(&w));
    SF_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    SF_CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, type, s.n, s.c, s.h, s.w));
    SF_CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, type, s.n, s.f, s.oh, s.ow));
    SF_CHECK_CUDNN(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NHWC, s.f, s.c, s.kh, s.kw));
    SF_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, s.pad_h, s.pad_w, s.stride, s.stride, 1, 1,
                                                   CUDNN_CROSS_CORRELATION, type));
  }
  void Destroy() noexcept {
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    conv = nullptr;
    w = nullptr;
    y = nullptr;
    x = nullptr;
  }
};

// One pass's chosen algorithm.
struct Choice {
  int algo = -1;  // -1: not searched yet; -2: searched, none usable (the layer uses im2col)
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// The first result (the fastest, or the best by heuristics) that succeeded, needs at most
// `max_workspace` bytes, uses an allowed math type and, for the backward passes, is
// deterministic; algo -2 when none is. fma_only (float without TF32) refuses tensor-op
// results, and the pass then runs with the descriptor's math type held at FMA; with TF32, a
// result that converts float down to half (ALLOW_CONVERSION) is refused too.
template <typename Perf>
Choice Pick(const Perf* perf, int count, bool fma_only, bool deterministic, size_t max_workspace) {
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > max_workspace) continue;
    if (fma_only && p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    return Choice{.algo = static_cast<int>(p.algo),
                  .math = fma_only ? CUDNN_FMA_MATH : p.mathType,
                  .workspace = p.memory};
  }
  return Choice{.algo = -2};
}

// SHARDFLOW_CUDNN_WORKSPACE_MB (default 1024): the most scratch one pass may take.
size_t MaxWorkspace() {
  return static_cast<size_t>(env::Int("SHARDFLOW_CUDNN_WORKSPACE_MB", 1024, 0)) << 20;
}

bool HeuristicSearch() {
  return env::Choice("SHARDFLOW_CUDNN_SEARCH", "find", {"find", "heuristic"}) == "heuristic";
}

// -1: not read yet; else 0 or 1.
std::atomic<int> g_conv_on{-1};

}  // namespace

bool ParseCudnnConv(const char* value) {
  const std::string want = value == nullptr ? "on" : value;
  if (want == "on" || want.empty()) return true;
  if (want == "off") return false;
  throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_CUDNN_CONV '" + want + "'",
              {.hint = "on (convolutions through cuDNN) or off (im2col + cuBLAS)"});
}

void SetCudnnConv(bool on) { g_conv_on.store(on ? 1 : 0); }

bool CudnnConvOn() {
  int on = g_conv_on.load();
  if (on < 0) {
    on = ParseCudnnConv(env::Text("SHARDFLOW_CUDNN_CONV").value_or("").c_str()) ? 1 : 0;
    g_conv_on.store(on);
  }
  return on != 0;
}

std::array<int, 4> CudnnOutputDims(const CudnnConvShape& s, bool is_double) {
  const Descriptors d(s, is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  std::array<int, 4> out{};
  SF_CHECK_CUDNN(
      cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &out[0], &out[1], &out[2], &out[3]));
  return out;
}

struct CudnnConv::Impl {
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, bool>;
  struct Entry {
    Entry(const CudnnConvShape& s, cudnnDataType_t type, bool fma) : d(s, type), fma_only(fma) {}
    Descriptors d;
    bool fma_only;  // float without TF32
    Choice fwd, bwd_data, bwd_filter;
  };

  Impl(DeviceExec& e, CudnnHandle& h)
      : exec(e), handle(h), heuristic(HeuristicSearch()), max_workspace(MaxWorkspace()) {}

  cudnnHandle_t Handle() { return handle.get(); }

  Entry& Get(const CudnnConvShape& s, cudnnDataType_t type) {
    if (!s.usable) throw Error(ErrorCode::kInternal, "cuDNN convolution without a plan: " + s.why);
    const bool f32 = type == CUDNN_DATA_FLOAT;
    const Key key{s.n,  s.c,      s.h,     s.w,     s.f,         s.kh,
                  s.kw, s.stride, s.pad_h, s.pad_w, f32 ? 0 : 1, f32 && tf32};
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.try_emplace(key, s, type, f32 && !tf32).first;
    Entry& e = it->second;
    // The math type the search may use (a chosen algorithm sets its own before it runs).
    const cudnnMathType_t math = !f32         ? CUDNN_DEFAULT_MATH
                                 : e.fma_only ? CUDNN_FMA_MATH
                                              : CUDNN_TENSOR_OP_MATH;
    SF_CHECK_CUDNN(cudnnSetConvolutionMathType(e.d.conv, math));
    return e;
  }

  static constexpr int kMaxAlgos = 16;

  void ChooseForward(Entry& e) {
    if (e.fwd.algo != -1) return;
    cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(Handle(), e.d.x, e.d.w, e.d.conv, e.d.y,
                                                            kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(Handle(), e.d.x, e.d.w, e.d.conv, e.d.y,
                                                          kMaxAlgos, &count, perf));
    }
    e.fwd = Pick(perf, count, e.fma_only, false, max_workspace);
  }

  void ChooseBackwardData(Entry& e) {
    if (e.bwd_data.algo != -1) return;
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(Handle(), e.d.w, e.d.y, e.d.conv,
                                                                 e.d.x, kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(Handle(), e.d.w, e.d.y, e.d.conv,
                                                               e.d.x, kMaxAlgos, &count, perf));
    }
    e.bwd_data = Pick(perf, count, e.fma_only, true, max_workspace);
  }

  void ChooseBackwardFilter(Entry& e) {
    if (e.bwd_filter.algo != -1) return;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(Handle(), e.d.x, e.d.y, e.d.conv,
                                                                   e.d.w, kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(Handle(), e.d.x, e.d.y, e.d.conv,
                                                                 e.d.w, kMaxAlgos, &count, perf));
    }
    e.bwd_filter = Pick(perf, count, e.fma_only, true, max_workspace);
  }

  // The pass's algorithm, searched on first use; false (logged once per shape and pass) when
  // cuDNN has none that the filters allow.
  bool Ready(const CudnnConvShape& s, cudnnDataType_t type, CudnnPass pass) {
    Entry& e = Get(s, type);
    Choice* c = nullptr;
    const char* name = "";
    switch (pass) {
      case CudnnPass::kForward:
        ChooseForward(e);
        c = &e.fwd;
        name = "forward";
        break;
      case CudnnPass::kBackwardData:
        ChooseBackwardData(e);
        c = &e.bwd_data;
        name = "input-gradient";
        break;
      case CudnnPass::kBackwardFilter:
        ChooseBackwardFilter(e);
        c = &e.bwd_filter;
        name = "kernel-gradient";
        break;
    }
    if (c->algo >= 0) return true;
    if (c->algo == -2) {
      c->algo = -3;  // said once
      SF_LOG(Warn) << "cuDNN offers no usable " << name << " algorithm for a convolution of " << s.n
                   << "x" << s.h << "x" << s.w << "x" << s.c << " by " << s.kh << "x" << s.kw
                   << " to " << s.f << " (stride " << s.stride << ", "
                   << (type == CUDNN_DATA_FLOAT ? "float" : "double")
                   << "): it runs as im2col + cuBLAS";
    }
    return false;
  }

  DeviceExec& exec;
  CudnnHandle& handle;
  const bool heuristic;
  const size_t max_workspace;
  bool tf32 = false;
  std::map<Key, Entry> cache;
};

CudnnConv::CudnnConv(DeviceExec& exec, CudnnHandle& handle)
    : impl_(std::make_unique<Impl>(exec, handle)) {}
CudnnConv::~CudnnConv() = default;

void CudnnConv::SetTf32(bool on) { impl_->tf32 = on; }

template <typename T>
bool CudnnConv::Ready(const CudnnConvShape& s, CudnnPass pass) {
  return s.usable && impl_->Ready(s, kType<T>, pass);
}
template bool CudnnConv::Ready<float>(const CudnnConvShape&, CudnnPass);
template bool CudnnConv::Ready<double>(const CudnnConvShape&, CudnnPass);

template <typename T>
void CudnnConv::Forward(const CudnnConvShape& s, const T* x, const T* w_fhwc, T beta, T* y) {
  Impl::Entry& e = impl_->Get(s, kType<T>);
  if (e.fwd.algo < 0) throw Error(ErrorCode::kInternal, "cuDNN forward pass without Ready()");
  SF_CHECK_CUDNN(cudnnSetConvolutionMathType(e.d.conv, e.fwd.math));
  shardflow::DeviceScratch<DeviceExec, char> ws(impl_->exec, static_cast<int64_t>(e.fwd.workspace));
  const T one = T(1);
  SF_CHECK_CUDNN(cudnnConvolutionForward(impl_->Handle(), &one, e.d.x, x, e.d.w, w_fhwc, e.d.conv,
                                         static_cast<cudnnConvolutionFwdAlgo_t>(e.fwd.algo),
                                         ws.get(), e.fwd.workspace, &beta, e.d.y, y));
}

template <typename T>
void CudnnConv::BackwardData(const CudnnConvShape& s, const T* dy, const T* w_fhwc, T* dx) {
  Impl::Entry& e = impl_->Get(s, kType<T>);
  if (e.bwd_data.algo < 0)
    throw Error(ErrorCode::kInternal, "cuDNN input gradient without Ready()");
  SF_CHECK_CUDNN(cudnnSetConvolutionMathType(e.d.conv, e.bwd_data.math));
  shardflow::DeviceScratch<DeviceExec, char> ws(impl_->exec,
                                                static_cast<int64_t>(e.bwd_data.workspace));
  const T one = T(1), zero = T(0);
  SF_CHECK_CUDNN(
      cudnnConvolutionBackwardData(impl_->Handle(), &one, e.d.w, w_fhwc, e.d.y, dy, e.d.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(e.bwd_data.algo),
                                   ws.get(), e.bwd_data.workspace, &zero, e.d.x, dx));
}

template <typename T>
void CudnnConv::BackwardFilter(const CudnnConvShape& s, const T* x, const T* dy, T* dw_fhwc) {
  Impl::Entry& e = impl_->Get(s, kType<T>);
  if (e.bwd_filter.algo < 0) {
    throw Error(ErrorCode::kInternal, "cuDNN kernel gradient without Ready()");
  }
  SF_CHECK_CUDNN(cudnnSetConvolutionMathType(e.d.conv, e.bwd_filter.math));
  shardflow::DeviceScratch<DeviceExec, char> ws(impl_->exec,
                                                static_cast<int64_t>(e.bwd_filter.workspace));
  const T one = T(1), zero = T(0);
  SF_CHECK_CUDNN(cudnnConvolutionBackwardFilter(
      impl_->Handle(), &one, e.d.x, x, e.d.y, dy, e.d.conv,
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(e.bwd_filter.algo), ws.get(),
      e.bwd_filter.workspace, &zero, e.d.w, dw_fhwc));
}

template void CudnnConv::Forward<float>(const CudnnConvShape&, const float*, const float*, float,
                                        float*);
template void CudnnConv::Forward<double>(const CudnnConvShape&, const double*, const double*,
                                         double, double*);
template void CudnnConv::BackwardData<float>(const CudnnConvShape&, const float*, const float*,
                                             float*);
template void CudnnConv::BackwardData<double>(const CudnnConvShape&, const double*, const double*,
                                              double*);
template void CudnnConv::BackwardFilter<float>(const CudnnConvShape&, const float*, const float*,
                                               float*);
template void CudnnConv::BackwardFilter<double>(const CudnnConvShape&, const double*, const double*,
                                                double*);

}  // namespace shardflow::cuda
