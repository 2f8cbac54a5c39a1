#include "core/cuda/cudnn_rnn.hpp"

#include <cudnn.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backend/kernel_backend.hpp"
#include "core/backend/kernels/lstm_weights.hpp"
#include "core/cuda/check_cuda.hpp"
#include "core/cuda/cudnn_handle.cuh"
#include "core/cuda/cudnn_ops.hpp"
#include "core/cuda/device_exec.cuh"
#include "core/error.hpp"

namespace shardflow::cuda {
namespace {

template <typename T>
constexpr cudnnDataType_t kType = std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;

int Int(int64_t v) { return static_cast<int>(v); }

// The descriptors of one shape: the RNN, the input and output sequences, the hidden and cell
// states (1, B, H).
struct RnnDescriptors {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, c = nullptr;

  // dropout: a zero-rate descriptor (one layer applies none; callers such as PyTorch pass one
  // rather than NULL), or NULL where no GPU is at hand to make one (the descriptor tests).
  RnnDescriptors(const LstmShape& s, cudnnDataType_t type, cudnnMathType_t math,
                 cudnnDropoutDescriptor_t dropout) {
    try {
      Make(s, type, math, dropout);
    } catch (...) {
      Destroy();
      throw;
    }
  }
  ~RnnDescriptors() { Destroy(); }
  RnnDescriptors(const RnnDescriptors&) = delete;
  RnnDescriptors& operator=(const RnnDescriptors&) = delete;

 private:
  // Unpacked (batch-major) sequences need padded I/O enabled, even with none padded.
  void Make(const LstmShape& s, cudnnDataType_t type, cudnnMathType_t math,
            cudnnDropoutDescriptor_t dropout) {
    SF_CHECK_CUDNN(cudnnCreateRNNDescriptor(&rnn));
    SF_CHECK_CUDNN(cudnnSetRNNDescriptor_v8(
        rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_SINGLE_INP_BIAS, CUDNN_UNIDIRECTIONAL,
        CUDNN_LINEAR_INPUT, type, type, math, Int(s.features), Int(s.units), Int(s.units), 1,
        dropout, CUDNN_RNN_PADDED_IO_ENABLED));
    const std::vector<int> lengths(static_cast<size_t>(s.batch), Int(s.steps));
    SF_CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&x));
    SF_CHECK_CUDNN(cudnnSetRNNDataDescriptor(x, type, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                             Int(s.steps), Int(s.batch), Int(s.features),
                                             lengths.data(), nullptr));
    SF_CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&y));
    SF_CHECK_CUDNN(cudnnSetRNNDataDescriptor(y, type, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                             Int(s.steps), Int(s.batch), Int(s.units),
                                             lengths.data(), nullptr));
    const int dims[3] = {1, Int(s.batch), Int(s.units)};
    const int strides[3] = {Int(s.batch * s.units), Int(s.units), 1};
    SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&h));
    SF_CHECK_CUDNN(cudnnSetTensorNdDescriptor(h, type, 3, dims, strides));
    SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&c));
    SF_CHECK_CUDNN(cudnnSetTensorNdDescriptor(c, type, 3, dims, strides));
  }
  void Destroy() noexcept {
    if (c != nullptr) cudnnDestroyTensorDescriptor(c);
    if (h != nullptr) cudnnDestroyTensorDescriptor(h);
    if (y != nullptr) cudnnDestroyRNNDataDescriptor(y);
    if (x != nullptr) cudnnDestroyRNNDataDescriptor(x);
    if (rnn != nullptr) cudnnDestroyRNNDescriptor(rnn);
    c = h = nullptr;
    x = y = nullptr;
    rnn = nullptr;
  }
};

using Bytes = DeviceScratch<DeviceExec, char>;

// What a forward pass leaves for its backward pass: the packed weights, the math type it ran
// with, and (a training pass) cuDNN's reserve space, which the backward pass consumes once.
struct CudnnLstmSaved final : LstmSaved {
  CudnnLstmSaved(DeviceExec& exec, bool train, cudnnMathType_t m, size_t weight_bytes,
                 size_t reserve_bytes)
      : training(train),
        math(m),
        weights(exec, static_cast<int64_t>(weight_bytes)),
        reserve(std::make_unique<Bytes>(exec, static_cast<int64_t>(reserve_bytes))),
        weight_size(weight_bytes),
        reserve_size(reserve_bytes) {}
  bool training;
  bool used = false;  // a backward pass has read the reserve space
  cudnnMathType_t math;
  Bytes weights;
  std::unique_ptr<Bytes> reserve;
  size_t weight_size, reserve_size;
  kernels::LstmWeightLayout layout;
};

// The number of elements a descriptor cudnnGetRNNWeightParams filled describes.
int64_t Elements(cudnnTensorDescriptor_t d) {
  cudnnDataType_t type;
  int nb = 0, dims[8] = {}, strides[8] = {};
  SF_CHECK_CUDNN(cudnnGetTensorNdDescriptor(d, 8, &type, &nb, dims, strides));
  int64_t n = 1;
  for (int i = 0; i < nb; ++i) n *= dims[i];
  return n;
}

}  // namespace

bool CudnnTakesLstm(const LstmShape& s) {
  if (!CudnnOpsOn(kCudnnLstm)) return false;
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {s.batch, s.steps, s.features, s.units}) {
    if (v < 1 || v > kMax) return false;
  }
  const double largest = static_cast<double>(s.batch) * s.steps * 4 * std::max(s.features, s.units);
  return largest <= static_cast<double>(kMax);
}

std::array<int, 4> CudnnLstmDescriptorSizes(const LstmShape& s, bool is_double) {
  const RnnDescriptors d(s, is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT,
                         is_double ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH, nullptr);
  cudnnRNNAlgo_t algo;
  cudnnRNNMode_t cell;
  cudnnRNNBiasMode_t bias;
  cudnnDirectionMode_t dir;
  cudnnRNNInputMode_t input;
  cudnnDataType_t type, prec;
  cudnnMathType_t math;
  int32_t in = 0, hidden = 0, proj = 0, layers = 0;
  cudnnDropoutDescriptor_t dropout;
  uint32_t flags = 0;
  SF_CHECK_CUDNN(cudnnGetRNNDescriptor_v8(d.rnn, &algo, &cell, &bias, &dir, &input, &type, &prec,
                                          &math, &in, &hidden, &proj, &layers, &dropout, &flags));
  if (cell != CUDNN_LSTM || bias != CUDNN_RNN_SINGLE_INP_BIAS || layers != 1 || proj != hidden ||
      flags != CUDNN_RNN_PADDED_IO_ENABLED) {
    throw Error(ErrorCode::kInternal, "cuDNN changed the LSTM descriptor it was given");
  }
  cudnnDataType_t dt;
  cudnnRNNDataLayout_t layout;
  int steps = 0, batch = 0, vec = 0;
  std::vector<int> lengths(static_cast<size_t>(s.batch));
  double fill = 0.0;  // the getter writes the padding symbol (room for a double)
  SF_CHECK_CUDNN(cudnnGetRNNDataDescriptor(d.x, &dt, &layout, &steps, &batch, &vec, Int(s.batch),
                                           lengths.data(), &fill));
  for (int l : lengths) {
    if (l != steps) throw Error(ErrorCode::kInternal, "cuDNN's sequence lengths are not T");
  }
  return {in, hidden, batch, steps};
}

struct CudnnRnn::Impl {
  Impl(DeviceExec& e, CudnnHandle& h) : exec(e), handle(h) {}
  ~Impl() {
    if (dropout != nullptr) cudnnDestroyDropoutDescriptor(dropout);
  }

  // A zero-rate dropout descriptor, made once (it needs the handle, so a GPU).
  cudnnDropoutDescriptor_t Dropout() {
    if (dropout == nullptr) {
      cudnnDropoutDescriptor_t d = nullptr;
      SF_CHECK_CUDNN(cudnnCreateDropoutDescriptor(&d));
      const cudnnStatus_t rc = cudnnSetDropoutDescriptor(d, handle.get(), 0.0f, nullptr, 0, 0);
      if (rc != CUDNN_STATUS_SUCCESS) cudnnDestroyDropoutDescriptor(d);
      SF_CHECK_CUDNN(rc);
      dropout = d;
    }
    return dropout;
  }

  cudnnMathType_t Math(cudnnDataType_t type) const {
    if (type != CUDNN_DATA_FLOAT) return CUDNN_DEFAULT_MATH;
    return tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;  // default math lets float use TF32
  }

  // B sequence lengths of T on the device, kept per (B, T).
  const int32_t* Lengths(const LstmShape& s) {
    auto& slot = lengths[{s.batch, s.steps}];
    if (!slot) {
      slot = std::make_unique<DeviceScratch<DeviceExec, int32_t>>(exec, s.batch);
      const std::vector<int32_t> host(static_cast<size_t>(s.batch), Int(s.steps));
      exec.CopyToDevice(slot->get(), host.data(), host.size() * sizeof(int32_t));
    }
    return slot->get();
  }

  // Where cuDNN keeps each gate's matrices and biases in `space`, in elements of T; each
  // matrix's size is checked against ours.
  template <typename T>
  kernels::LstmWeightLayout Layout(const LstmShape& s, const RnnDescriptors& d, const void* space,
                                   size_t bytes) {
    kernels::LstmWeightLayout l;
    cudnnTensorDescriptor_t m = nullptr, b = nullptr;
    SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&m));
    const cudnnStatus_t rc = cudnnCreateTensorDescriptor(&b);
    if (rc != CUDNN_STATUS_SUCCESS) cudnnDestroyTensorDescriptor(m);
    SF_CHECK_CUDNN(rc);
    try {
      const char* base = static_cast<const char*>(space);
      auto offset = [&](void* p) {
        return (static_cast<const char*>(p) - base) / int64_t{sizeof(T)};
      };
      for (int id = 0; id < 8; ++id) {
        void* maddr = nullptr;
        void* baddr = nullptr;
        SF_CHECK_CUDNN(cudnnGetRNNWeightParams(handle.get(), d.rnn, 0, bytes, space, id, m, &maddr,
                                               b, &baddr));
        const int q = id % 4;
        const int64_t want = id < 4 ? s.units * s.features : s.units * s.units;
        if (baddr != nullptr && Elements(b) != s.units) {
          throw Error(ErrorCode::kInternal, "cuDNN's LSTM bias " + std::to_string(id) +
                                                " does not have " + std::to_string(s.units) +
                                                " elements");
        }
        if (maddr == nullptr || Elements(m) != want) {
          throw Error(ErrorCode::kInternal, "cuDNN's LSTM weight " + std::to_string(id) +
                                                " is not the (" + std::to_string(s.units) + " x " +
                                                std::to_string(id < 4 ? s.features : s.units) +
                                                ") matrix expected");
        }
        (id < 4 ? l.w : l.r)[q] = offset(maddr);
        if (id < 4) {
          if (baddr == nullptr) throw Error(ErrorCode::kInternal, "cuDNN's LSTM has no input bias");
          l.b[q] = offset(baddr);
        } else {
          l.rb[q] = baddr == nullptr ? -1 : offset(baddr);
        }
      }
    } catch (...) {
      cudnnDestroyTensorDescriptor(b);
      cudnnDestroyTensorDescriptor(m);
      throw;
    }
    cudnnDestroyTensorDescriptor(b);
    cudnnDestroyTensorDescriptor(m);
    return l;
  }

  DeviceExec& exec;
  CudnnHandle& handle;
  bool tf32 = false;
  cudnnDropoutDescriptor_t dropout = nullptr;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<DeviceScratch<DeviceExec, int32_t>>>
      lengths;
};

CudnnRnn::CudnnRnn(DeviceExec& exec, CudnnHandle& handle)
    : impl_(std::make_unique<Impl>(exec, handle)) {}
CudnnRnn::~CudnnRnn() = default;

void CudnnRnn::SetTf32(bool on) { impl_->tf32 = on; }

// A refusal (NOT_SUPPORTED, BAD_PARAM) answers null before anything of the layer's is written:
// the backend then leaves the layer on its step-by-step path.
template <typename T>
std::unique_ptr<LstmSaved> CudnnRnn::Forward(const LstmShape& s, bool training, const T* x,
                                             const T* kernel, const T* recurrent, const T* bias,
                                             T* hs) {
  Impl& im = *impl_;
  const cudnnMathType_t math = im.Math(kType<T>);
  const RnnDescriptors d(s, kType<T>, math, im.Dropout());
  const cudnnForwardMode_t mode = training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  if (CudnnRefused(cudnnGetRNNWeightSpaceSize(im.handle.get(), d.rnn, &weight_bytes), "LSTM",
                   "cudnnGetRNNWeightSpaceSize") ||
      CudnnRefused(
          cudnnGetRNNTempSpaceSizes(im.handle.get(), d.rnn, mode, d.x, &work_bytes, &reserve_bytes),
          "LSTM", "cudnnGetRNNTempSpaceSizes")) {
    return nullptr;
  }
  auto saved =
      std::make_unique<CudnnLstmSaved>(im.exec, training, math, weight_bytes, reserve_bytes);
  saved->layout = im.Layout<T>(s, d, saved->weights.get(), weight_bytes);
  im.exec.Run(kernels::PackLstmWeightsK<T>::Size(s.features, s.units),
              kernels::PackLstmWeightsK<T>{saved->layout, s.features, s.units, kernel, recurrent,
                                           bias, reinterpret_cast<T*>(saved->weights.get())});
  Bytes work(im.exec, static_cast<int64_t>(work_bytes));
  if (CudnnRefused(cudnnRNNForward(im.handle.get(), d.rnn, mode, im.Lengths(s), d.x, x, d.y, hs,
                                   d.h, nullptr, nullptr, d.c, nullptr, nullptr, weight_bytes,
                                   saved->weights.get(), work_bytes, work.get(), reserve_bytes,
                                   saved->reserve->get()),
                   "LSTM", "cudnnRNNForward")) {
    return nullptr;
  }
  return saved;
}

// After an inference forward pass (the layer may be asked for gradients anyway), the pass runs
// again in training mode from the saved weights for the reserve space cuDNN's backward reads.
template <typename T>
void CudnnRnn::Backward(const LstmShape& s, const T* x, const T* hs, const T* dhs, const T* dlast,
                        LstmSaved& saved_base, T* dkernel, T* drecurrent, T* dbias, T* dx) {
  Impl& im = *impl_;
  auto* saved = dynamic_cast<CudnnLstmSaved*>(&saved_base);
  if (saved == nullptr) {
    throw Error(ErrorCode::kInternal, "an LSTM backward pass without its cuDNN forward pass");
  }
  if (saved->used) {
    throw Error(ErrorCode::kInternal, "a second LSTM backward pass over one cuDNN forward pass");
  }
  saved->used = true;
  const RnnDescriptors d(s, kType<T>, saved->math, im.Dropout());
  size_t work_bytes = 0, reserve_bytes = 0;
  SF_CHECK_CUDNN(cudnnGetRNNTempSpaceSizes(im.handle.get(), d.rnn, CUDNN_FWD_MODE_TRAINING, d.x,
                                           &work_bytes, &reserve_bytes));
  const int64_t out = s.batch * s.steps * s.units;
  Bytes work(im.exec, static_cast<int64_t>(work_bytes));
  DeviceScratch<DeviceExec, T> hs_again(im.exec, saved->training ? 0 : out);
  if (!saved->training) {
    saved->reserve = std::make_unique<Bytes>(im.exec, static_cast<int64_t>(reserve_bytes));
    saved->reserve_size = reserve_bytes;
    SF_CHECK_CUDNN(cudnnRNNForward(im.handle.get(), d.rnn, CUDNN_FWD_MODE_TRAINING, im.Lengths(s),
                                   d.x, x, d.y, hs_again.get(), d.h, nullptr, nullptr, d.c, nullptr,
                                   nullptr, saved->weight_size, saved->weights.get(), work_bytes,
                                   work.get(), reserve_bytes, saved->reserve->get()));
    hs = hs_again.get();
  } else if (reserve_bytes != saved->reserve_size) {
    throw Error(ErrorCode::kInternal, "cuDNN's LSTM reserve space changed size between passes");
  }
  // cuDNN reads a gradient for every step's output and writes an input gradient: zeros and
  // scratch where the layer has none.
  DeviceScratch<DeviceExec, T> zeros(im.exec, dhs == nullptr ? out : 0);
  if (dhs == nullptr) {
    SF_CHECK_CUDA(cudaMemsetAsync(zeros.get(), 0, out * sizeof(T), im.exec.stream()));
  }
  DeviceScratch<DeviceExec, T> dx_unused(im.exec,
                                         dx == nullptr ? s.batch * s.steps * s.features : 0);
  SF_CHECK_CUDNN(cudnnRNNBackwardData_v8(
      im.handle.get(), d.rnn, im.Lengths(s), d.y, hs, dhs != nullptr ? dhs : zeros.get(), d.x,
      dx != nullptr ? dx : dx_unused.get(), d.h, nullptr, dlast, nullptr, d.c, nullptr, nullptr,
      nullptr, saved->weight_size, saved->weights.get(), work_bytes, work.get(),
      saved->reserve_size, saved->reserve->get()));
  Bytes dweights(im.exec, static_cast<int64_t>(saved->weight_size));
  SF_CHECK_CUDA(cudaMemsetAsync(dweights.get(), 0, saved->weight_size, im.exec.stream()));
  SF_CHECK_CUDNN(cudnnRNNBackwardWeights_v8(
      im.handle.get(), d.rnn, CUDNN_WGRAD_MODE_ADD, im.Lengths(s), d.x, x, d.h, nullptr, d.y, hs,
      saved->weight_size, dweights.get(), work_bytes, work.get(), saved->reserve_size,
      saved->reserve->get()));
  im.exec.Run(kernels::UnpackLstmGradsK<T>::Size(s.features, s.units),
              kernels::UnpackLstmGradsK<T>{saved->layout, s.features, s.units,
                                           reinterpret_cast<const T*>(dweights.get()), dkernel,
                                           drecurrent, dbias});
}

#define SF_INSTANTIATE(T)                                                                       \
  template std::unique_ptr<LstmSaved> CudnnRnn::Forward<T>(const LstmShape&, bool, const T*,    \
                                                           const T*, const T*, const T*, T*);   \
  template void CudnnRnn::Backward<T>(const LstmShape&, const T*, const T*, const T*, const T*, \
                                      LstmSaved&, T*, T*, T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cuda
