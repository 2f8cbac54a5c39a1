// Convolutions through cuDNN for the CUDA backend (Backend::ConvForward / ConvBackwardData /
// ConvBackwardFilter; core/cuda/cuda_backend.cu calls these).
//
// Layout. Our images are NHWC and our kernels (KH, KW, C, F); cuDNN takes NHWC tensors and an
// NHWC filter, which is (F, KH, KW, C): the backend transposes the kernel into scratch for each
// call (F x KH*KW*C elements, small beside the images) and the kernel gradient back.
// Padding. cuDNN's legacy convolution pads both sides alike; our "same" convolutions put an odd
// total's extra row and column at the bottom and right (TensorFlow's split). A plan then pads the
// input itself with the missing rows and columns (as TensorFlow does before calling cuDNN) and
// hands cuDNN the symmetric part; the input gradient is cropped back. PlanCudnnConv says how,
// and CudnnOutputDims asks cuDNN's own descriptors what they make of a plan, which needs no GPU:
// tests/cuda/cudnn_plan_test.cpp holds every plan of a sweep of shapes to our geometry.
// Algorithms. Found once per shape, dtype and math mode and cached (TensorFlow's autotune):
// SHARDFLOW_CUDNN_SEARCH = find (default; cuDNN times every algorithm) | heuristic (cuDNN's
// heuristics pick without running, so every rank and run of a job takes the same one).
// Backward passes take only algorithms cuDNN marks deterministic, so a step repeats bit for bit;
// no pass takes more than SHARDFLOW_CUDNN_WORKSPACE_MB (default 1024) of scratch.
// float convolutions use FMA kernels unless TF32 is on (SetTf32; train.tf32), so results track
// the CPU as the cuBLAS GEMMs do.
// Switch: SHARDFLOW_CUDNN_CONV = on (default) | off, read on first use, or SetCudnnConv: off
// keeps the GPU's convolutions on im2col + cuBLAS. The GPU's own setting: the CPU's choice
// (SHARDFLOW_CONV, core/cpu/onednn_conv.hpp) is the CPU backend's and does not reach here.
// Thread-safety: as the executor's (one call at a time; all work is ordered on its stream).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "core/backend/conv_geometry.hpp"

namespace shardflow::cuda {

class CudnnHandle;
class DeviceExec;

// How one convolution of ours maps onto cuDNN's.
struct CudnnConvShape {
  bool usable = false;
  std::string why;                 // when not usable
  int n = 0, c = 0, h = 0, w = 0;  // the input cuDNN sees: our (H + eh, W + ew)
  int f = 0, kh = 0, kw = 0, stride = 1;
  int pad_h = 0, pad_w = 0;  // symmetric padding given to cuDNN
  int eh = 0, ew = 0;        // zero rows below and columns right that we add
  int oh = 0, ow = 0;        // our output size (what cuDNN must produce)
};

CudnnConvShape PlanCudnnConv(const ConvGeometry& g, int64_t f, int64_t batch);

// SHARDFLOW_CUDNN_CONV's value: "on" / unset -> true, "off" -> false; anything else throws
// Error(kInvalidArgument) naming the value.
bool ParseCudnnConv(const char* value);
void SetCudnnConv(bool on);
bool CudnnConvOn();  // the setting, from the environment on first use

// The output (n, f, oh, ow) that cuDNN's descriptors compute for a usable plan, in float or
// double. Needs the library, not a GPU. Throws Error(kInternal) with cuDNN's message.
std::array<int, 4> CudnnOutputDims(const CudnnConvShape& s, bool is_double);

enum class CudnnPass { kForward, kBackwardData, kBackwardFilter };

class CudnnConv {
 public:
  CudnnConv(DeviceExec& exec, CudnnHandle& handle);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  void SetTf32(bool on);
  // Whether cuDNN takes this pass of a usable plan: its algorithm is searched on first use;
  // false (logged once) when no algorithm passes the filters (deterministic backward passes,
  // FMA math without TF32, at most SHARDFLOW_CUDNN_WORKSPACE_MB of scratch): the layer then
  // runs im2col + cuBLAS. REQUIRES a true answer before Forward / BackwardData / BackwardFilter.
  template <typename T>
  bool Ready(const CudnnConvShape& s, CudnnPass pass);
  // The input tensors are cuDNN's view (already padded by eh/ew). y = conv(x, w) + beta y.
  template <typename T>
  void Forward(const CudnnConvShape& s, const T* x, const T* w_fhwc, T beta, T* y);
  // dx (the padded input's shape) = the input gradient.
  template <typename T>
  void BackwardData(const CudnnConvShape& s, const T* dy, const T* w_fhwc, T* dx);
  // dw (F, KH, KW, C) = the kernel gradient.
  template <typename T>
  void BackwardFilter(const CudnnConvShape& s, const T* x, const T* dy, T* dw_fhwc);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardflow::cuda
