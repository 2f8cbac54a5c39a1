// Layer: one step of a model with an explicit forward and backward pass.
//
// Conventions every layer follows:
//  - Tensors are row-major with the batch first. Images are NHWC (batch, height, width,
//    channels): channels are contiguous, so a convolution's im2col rows are plain copies of
//    KW*C runs and its output comes out of the GEMM already in NHWC, with no transposes; it is
//    also TensorFlow's default, so weights and data move between the two unchanged. Sequences
//    are (batch, time, features).
//  - Build() is called once with the per-sample input shape (no batch dimension). It declares
//    the layer's parameters in the arena and returns the per-sample output shape.
//  - Forward() returns y; the layer may keep references to x and y (shared storage) for its
//    backward pass, so the caller keeps x unchanged until Backward(). The returned tensor is
//    the layer's own buffer and is overwritten by the next Forward().
//  - Backward(dy) ACCUMULATES (+=) parameter gradients into the gradient arena (zero it with
//    Arena::ZeroGrads() once per step) and returns dx, or an empty tensor when !need_dx.
//  - Layers are templated on the scalar type T: float for training, double for the gradient
//    checks in the tests. Instantiated for float and double only.
// Thread-safety: a layer is used by one thread at a time; kernels may use intra-op threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.hpp"
#include "core/tensor.hpp"

namespace shardflow {

// Where a layer declares its parameters.
template <typename T>
struct BuildContext {
  Arena<T>* arena = nullptr;
  int layer_index = 0;     // position in the model; names buckets and checkpoint groups
  std::string layer_name;  // "03_dense"
  std::string prefix;      // prepended to parameter names ("conv1/" inside a residual block)
  int Declare(const std::string& name, Shape shape, bool decay) {
    return arena->Declare(layer_index, layer_name, prefix + name, std::move(shape), decay);
  }
};

// Per-call settings of a forward pass.
struct ForwardContext {
  bool training = false;  // dropout active, batch norm uses batch statistics and updates stats
  uint64_t seed = 0;      // model seed (dropout masks)
  uint64_t step = 0;      // training step (dropout masks differ per step)
};

// A non-trainable tensor a layer keeps (batch norm running statistics); saved in checkpoints.
struct NamedTensor {
  std::string name;
  Tensor* tensor = nullptr;
};

template <typename T>
class Layer {
 public:
  virtual ~Layer() = default;
  // Short kind name: "dense", "conv2d", ...
  virtual std::string kind() const = 0;
  // The spec this layer was made from, e.g. "conv:32:5x5:same".
  virtual std::string Describe() const = 0;
  virtual Shape Build(const Shape& in, BuildContext<T>& ctx) = 0;
  // Fills parameters deterministically from `seed` (called after the arena is allocated).
  virtual void Initialize(uint64_t /*seed*/) {}
  // x is (B, in...); returns (B, out...).
  virtual Tensor Forward(const Tensor& x, const ForwardContext& ctx) = 0;
  // dy is (B, out...); returns dx (B, in...) or an empty tensor when !need_dx.
  virtual Tensor Backward(const Tensor& dy, bool need_dx) = 0;
  // Forward floating-point operations per sample (a multiply-add counts 2).
  virtual int64_t FlopsPerSample() const { return 0; }
  virtual std::vector<NamedTensor> Buffers() { return {}; }
};

// Returns `buf` if it already has this dtype and shape (and owns its storage), else a fresh
// zero-filled tensor stored into `buf`. Layers use it to keep output buffers across steps.
inline Tensor& ReuseBuffer(Tensor& buf, DType dtype, const Shape& shape) {
  if (!buf.owns_storage() || buf.dtype() != dtype || buf.shape() != shape) {
    buf = Tensor(dtype, shape);
  }
  return buf;
}

// (B, s...) for a per-sample shape s.
inline Shape WithBatch(int64_t batch, const Shape& sample) {
  Shape s{batch};
  s.insert(s.end(), sample.begin(), sample.end());
  return s;
}

// Checks that x is (B, expected...) and returns B; throws Error(kInvalidArgument) naming the layer.
int64_t CheckInput(const Tensor& x, const Shape& expected, const std::string& layer);

}  // namespace shardflow
