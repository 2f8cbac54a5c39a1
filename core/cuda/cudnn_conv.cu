#include "core/cuda/cudnn_conv.hpp"

#include <cudnn.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>

#include "core/backend/kernel_backend.hpp"
#include "core/cuda/check_cuda.hpp"
#include "core/cuda/device_exec.cuh"
#include "core/error.hpp"

namespace shardflow::cuda {

CudnnConvShape PlanCudnnConv(const cpu::ConvGeometry& g, int64_t f, int64_t batch) {
  CudnnConvShape s;
  // cuDNN's sizes are ints; the padded input's element count must fit its int64 strides.
  const int64_t pb = (g.oh - 1) * g.stride + g.kh - g.h - g.pad_top;
  const int64_t pr = (g.ow - 1) * g.stride + g.kw - g.w - g.pad_left;
  const int64_t eh = pb > g.pad_top ? pb - g.pad_top : 0,
                ew = pr > g.pad_left ? pr - g.pad_left : 0;
  const int64_t largest = std::max({batch, g.c, g.h + eh, g.w + ew, f, g.kh, g.kw, g.oh, g.ow});
  if (batch <= 0 || f <= 0 || g.c <= 0) {
    s.why = "an empty batch or channel count";
    return s;
  }
  if (largest > std::numeric_limits<int>::max()) {
    s.why = "a dimension beyond cuDNN's int range";
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
  ~Descriptors() {
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// One pass's chosen algorithm.
struct Choice {
  int algo = -1;  // -1: not chosen yet
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// Picks the first (fastest, or best by heuristics) result that succeeded, uses an allowed math
// type and, for the backward passes, is deterministic. fma_only (float without TF32) refuses
// tensor-op results; the pass then runs with the descriptor's math type held at FMA.
template <typename Perf>
Choice Pick(const Perf* perf, int count, bool fma_only, bool deterministic, const char* pass) {
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (fma_only && p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    return Choice{.algo = static_cast<int>(p.algo),
                  .math = fma_only ? CUDNN_FMA_MATH : p.mathType,
                  .workspace = p.memory};
  }
  throw Error(
      ErrorCode::kInternal,
      std::string("cuDNN offers no usable algorithm for the ") + pass + " pass of this convolution",
      {.hint = "SHARDFLOW_CONV=own runs it as im2col + cuBLAS"});
}

bool HeuristicSearch() {
  const char* env = std::getenv("SHARDFLOW_CUDNN_SEARCH");
  const std::string want = env == nullptr ? "find" : env;
  if (want == "find") return false;
  if (want == "heuristic") return true;
  throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_CUDNN_SEARCH '" + want + "'",
              {.hint = "find or heuristic"});
}

}  // namespace

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

  explicit Impl(DeviceExec& e) : exec(e), heuristic(HeuristicSearch()) {}
  ~Impl() {
    if (handle != nullptr) cudnnDestroy(handle);
  }

  cudnnHandle_t Handle() {
    if (handle == nullptr) {
      SF_CHECK_CUDNN(cudnnCreate(&handle));
      SF_CHECK_CUDNN(cudnnSetStream(handle, exec.stream()));
    }
    return handle;
  }

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
    if (e.fwd.algo >= 0) return;
    cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(Handle(), e.d.x, e.d.w, e.d.conv, e.d.y,
                                                            kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(Handle(), e.d.x, e.d.w, e.d.conv, e.d.y,
                                                          kMaxAlgos, &count, perf));
    }
    e.fwd = Pick(perf, count, e.fma_only, false, "forward");
  }

  void ChooseBackwardData(Entry& e) {
    if (e.bwd_data.algo >= 0) return;
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(Handle(), e.d.w, e.d.y, e.d.conv,
                                                                 e.d.x, kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(Handle(), e.d.w, e.d.y, e.d.conv,
                                                               e.d.x, kMaxAlgos, &count, perf));
    }
    e.bwd_data = Pick(perf, count, e.fma_only, true, "input-gradient");
  }

  void ChooseBackwardFilter(Entry& e) {
    if (e.bwd_filter.algo >= 0) return;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
    int count = 0;
    if (heuristic) {
      SF_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(Handle(), e.d.x, e.d.y, e.d.conv,
                                                                   e.d.w, kMaxAlgos, &count, perf));
    } else {
      SF_CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(Handle(), e.d.x, e.d.y, e.d.conv,
                                                                 e.d.w, kMaxAlgos, &count, perf));
    }
    e.bwd_filter = Pick(perf, count, e.fma_only, true, "kernel-gradient");
  }

  DeviceExec& exec;
  const bool heuristic;
  bool tf32 = false;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Entry> cache;
};

CudnnConv::CudnnConv(DeviceExec& exec) : impl_(std::make_unique<Impl>(exec)) {}
CudnnConv::~CudnnConv() = default;

void CudnnConv::SetTf32(bool on) { impl_->tf32 = on; }

template <typename T>
void CudnnConv::Forward(const CudnnConvShape& s, const T* x, const T* w_fhwc, T beta, T* y) {
  Impl::Entry& e = impl_->Get(s, kType<T>);
  impl_->ChooseForward(e);
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
  impl_->ChooseBackwardData(e);
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
  impl_->ChooseBackwardFilter(e);
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
