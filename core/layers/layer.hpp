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
//  - Forward(x, ctx, state) returns y and keeps in `state` (a LayerState from NewState(), one
//    per micro-batch in flight) what its backward pass needs: references to x and y (shared
//    storage, so the caller keeps x unchanged until Backward()), masks, statistics, and the
//    output and dx buffers, which are reused by the next Forward with the same state. A layer
//    object itself keeps only its configuration, parameter ids and non-trainable buffers, so
//    several micro-batches can be in flight: F1 F2 B2 B1 with two states gives each backward
//    pass exactly what its own forward pass saved.
//  - Backward(dy, need_dx, state) ACCUMULATES (+=) parameter gradients into the gradient arena
//    (zero it with Arena::ZeroGrads() once per step) and returns dx, or an empty tensor when
//    !need_dx. The gradient of two micro-batches is therefore the sum in the order their
//    backward passes ran (floating-point addition is not associative).
//  - Forward(x, ctx) and Backward(dy, need_dx) use a state the layer owns (one micro-batch).
//  - Kernels run on the backend of the input's device (core/backend/backend.hpp), chosen once
//    per call.
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
#include "core/backend/backend.hpp"
#include "core/device_scope.hpp"
#include "core/layers/remote_table.hpp"
#include "core/layers/tensor_parallel.hpp"
#include "core/tensor.hpp"

namespace shardflow {

// Where a layer declares its parameters.
template <typename T>
struct BuildContext {
  Arena<T>* arena = nullptr;
  int layer_index = 0;     // position in the model; names buckets and checkpoint groups
  std::string layer_name;  // "03_dense"
  std::string prefix;      // prepended to parameter names ("conv1/" inside a residual block)
  // Tensor parallelism (core/layers/tensor_parallel.hpp): the model's way and sums (null: not
  // split), and whether the layer's input is a way's slice of its last dimension (T times
  // shorter than in the whole model).
  const TensorParallel* tp = nullptr;
  bool input_split = false;
  // Embedding bags keep their tables elsewhere and compute with a window of rows
  // (core/layers/remote_table.hpp; ModelOptions::remote_tables).
  bool remote_tables = false;
  int Declare(const std::string& name, Shape shape, bool decay) {
    return arena->Declare(layer_index, layer_name, prefix + name, std::move(shape), decay);
  }
  // Declares a way's slice `slice` of a parameter of shape `full`, cut along `axis`; with one
  // way (slice.size == slice.full) a plain Declare of the whole parameter.
  int DeclareSlice(const std::string& name, Shape full, int axis, const TpSlice& slice,
                   bool decay) {
    if (slice.size == slice.full) return Declare(name, std::move(full), decay);
    Shape shape = full;
    shape[axis] = slice.size;
    const int id = Declare(name, std::move(shape), decay);
    arena->SetSplit(id, axis, slice.begin, std::move(full));
    return id;
  }
};

// Per-call settings of a forward pass.
struct ForwardContext {
  bool training = false;     // dropout active, batch norm uses batch statistics and updates stats
  uint64_t seed = 0;         // model seed (dropout masks)
  uint64_t step = 0;         // training step (dropout masks differ per step)
  uint64_t micro_batch = 0;  // index of the micro-batch within the step (dropout masks)
  // Padded sequences: per sample, the positions before its padding (>= 1), as the model's first
  // layer found them (Layer::SequenceLengths: tokens:V:D:PAD); null when nothing is padded.
  // Attention masks the keys past them, seqpool:mean averages only them.
  const std::vector<int64_t>* lengths = nullptr;
};

// What one layer saved during a forward pass for its backward pass, for one micro-batch. Each
// layer kind derives its own (Layer::NewState); the base holds nothing.
struct LayerState {
  virtual ~LayerState() = default;
};

// The state `s` as the layer's own kind S; throws Error(kInternal) when it was made by another
// kind of layer (a state passed to the wrong layer).
template <typename S>
S& StateAs(LayerState& s, const std::string& layer) {
  S* p = dynamic_cast<S*>(&s);
  if (p == nullptr) {
    throw Error(ErrorCode::kInternal, "layer " + layer + " got a state made by another layer");
  }
  return *p;
}

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
  // A fresh, empty state for one micro-batch in flight.
  virtual std::unique_ptr<LayerState> NewState() const { return std::make_unique<LayerState>(); }
  // x is (B, in...); returns (B, out...), valid until the next Forward with this state.
  Tensor Forward(const Tensor& x, const ForwardContext& ctx, LayerState& state) {
    return DoForward(x, ctx, state);
  }
  // dy is (B, out...); returns dx (B, in...) or an empty tensor when !need_dx. REQUIRES: state
  // holds this layer's forward pass of the micro-batch dy belongs to.
  Tensor Backward(const Tensor& dy, bool need_dx, LayerState& state) {
    return DoBackward(dy, need_dx, state);
  }
  // The same with a state the layer owns (one micro-batch in flight).
  Tensor Forward(const Tensor& x, const ForwardContext& ctx) { return DoForward(x, ctx, Own()); }
  Tensor Backward(const Tensor& dy, bool need_dx) { return DoBackward(dy, need_dx, Own()); }
  // Forward floating-point operations per sample (a multiply-add counts 2).
  virtual int64_t FlopsPerSample() const { return 0; }
  virtual std::vector<NamedTensor> Buffers() { return {}; }
  // How the layer treats tensor-split activations (core/layers/tensor_parallel.hpp).
  virtual TpRole tp_role() const { return TpRole::kReplicated; }
  // Fusion of a ReLU into the layer after it (Sequential, core/model.cpp): the next layer's
  // AbsorbPrecedingRelu() applies the ReLU itself (max pooling: relu(max x) = max relu(x)) and
  // returns true, and the ReLU's PassThrough() then makes it hand x on unchanged, forward and
  // backward. Both return false where a layer cannot.
  virtual bool AbsorbPrecedingRelu() { return false; }
  virtual bool PassThrough() { return false; }
  // A first layer that knows where its input's padding starts (the token embedding with a pad
  // id) sets (*lengths)[b] for each sample of x and returns true; Sequential passes them to
  // every layer as ForwardContext::lengths.
  virtual bool SequenceLengths(const Tensor& /*x*/, std::vector<int64_t>* /*lengths*/) const {
    return false;
  }
  // A layer built with BuildContext::remote_tables whose table lives elsewhere; null otherwise.
  virtual RemoteTable<T>* remote_table() { return nullptr; }

 protected:
  virtual Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& state) = 0;
  virtual Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& state) = 0;

 private:
  LayerState& Own() {
    if (!own_) own_ = NewState();
    return *own_;
  }
  std::unique_ptr<LayerState> own_;
};

// Returns `buf` if it already has this dtype, shape and device (and owns its storage), else a
// fresh zero-filled tensor on the current device (core/device_scope.hpp) stored into `buf`.
// Layers use it to keep the buffers of a LayerState across steps (no allocation per step once
// the shapes settle).
inline Tensor& ReuseBuffer(Tensor& buf, DType dtype, const Shape& shape) {
  const Device device = CurrentDevice();
  if (!buf.owns_storage() || buf.dtype() != dtype || buf.shape() != shape ||
      buf.device() != device) {
    buf = Tensor(dtype, shape, device);
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
// CheckInput for the layers of a token-sequence model (tokens, attention, block, layernorm,
// seqpool, dense, activations, dropout): x's first per-sample dimension may also be shorter
// than expected[0] (>= 1) when expected has `sequence_rank` or more dimensions: a batch padded
// to its longest sequence rather than the model's context (io/pipeline/text_input.hpp pad_to).
// Per-row layers treat the shorter batch as fewer rows; the model's input check allows it only
// when its first layer reads tokens, so other models' shapes stay exact.
int64_t CheckSequenceInput(const Tensor& x, const Shape& expected, const std::string& layer,
                           size_t sequence_rank = 2);

// For layers whose loops read host memory (embedding lookups, attention, layer norm, ...):
// throws Error(kInvalidArgument, key model) "LAYER runs on CPU tensors only" when t lives on a
// device without host memory.
void CheckHostTensor(const Tensor& t, const char* layer);

}  // namespace shardflow
