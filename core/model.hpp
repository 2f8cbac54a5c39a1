// Sequential model: layers built from a spec string, parameters in one flat arena.
//
// A spec is a comma-separated list of layers (whitespace ignored):
//   dense:U[:col|:row]      fully connected, U units (time-distributed on sequences)
//   conv:F:KHxKW[:same|valid][:sS][:nobias][:col|:row]
//                           2-D convolution, F filters, optional stride S (default 1);
//                           nobias: no bias (before a batchnorm)
//   maxpool:K[:S]  avgpool:K[:S]     pooling window K, stride S (default K), valid padding
//   pad:P                   zero padding of P pixels around each image (H + 2P, W + 2P)
//   gap                     global average pooling
//   relu  gelu  tanh  sigmoid
//   flatten                 (B, ...) -> (B, N)
//   dropout:R               inverted dropout, rate R in [0, 1)
//   batchnorm               batch normalisation over the last dimension
//   residual:F[:S]          basic ResNet block (core/layers/residual.hpp)
//   bottleneck:F[:S]        ResNet-50's bottleneck block, 4F out (core/layers/residual.hpp)
//   lstm:H[:seq]            LSTM, H units; ":seq" returns the whole sequence
//   repeat[:T]              (B, H) -> (B, T, H); T defaults to the model input's length
//   embedding:N:D:AT        (B, W) -> (B, W - 1 + D): column AT's index into an N x D table
//                           (core/layers/embedding.hpp)
//   embedbag:N:D:AT:BAGS[:sum|mean|sqrtn]
//                           id slots from column AT, grouped into bags (26+1x8: 26 single ids,
//                           then a list of 8), each bag replaced by the combination of its ids'
//                           rows of an N x D table (core/layers/embedding_bag.hpp)
//   wide:N:K:AT:S           the last layer only: adds to the output (K values) a linear model
//                           of the input's S id slots from AT, the sum of their rows of an
//                           N x K table starting at zero: a wide-and-deep model (Cheng et al.
//                           2016; not cut into pipeline stages)
//   tokens:V:D[:PAD]        (B, T) token ids -> (B, T, D): token and learned position embedding;
//                           PAD: the padding id of padded sequences, which the layers after
//                           then mask (core/layers/token_embedding.hpp)
//   layernorm               layer normalisation over the last dimension
//   attention:H[:causal]    multi-head self-attention, H heads (core/layers/attention.hpp)
//   block:H[:causal][:P]    pre-LN transformer block: attention and a 4D GELU MLP, each with
//                           its residual, P its residual dropout
//                           (core/layers/transformer_block.hpp)
//   seqpool:mean|first      (B, T, D) -> (B, D): mean over positions, or position 0
//   lmhead                  (B, T, D) -> (B, T, V): logits by the tokens layer's own table
//                           (tied weights, core/layers/lm_head.hpp)
// or one of the presets (PresetSpec): linear, mlp, cnn, resnet, resnet50, lstm_autoencoder.
//
// Tensor parallelism (core/layers/tensor_parallel.hpp): ":col" marks a column-parallel layer
// (split over output units / channels), ":row" a row-parallel one (split over input features /
// channels). A model built with ModelOptions::tensor_parallel = {way, ways T, sums} holds way
// `way` of T: the marked layers' slices of their parameters (ParamSpec split_axis, split_begin,
// full_shape) and a slice of the activations between a :col and its :row; every other layer
// is replicated. A spec must close every :col with a :row before any layer that needs its whole
// input (flatten, unmarked dense/conv, lstm, batchnorm, residual, repeat, the model's output);
// only activations, dropout and pooling may sit between them. With T = 1 (the default) marked
// layers are exactly the unmarked ones. Layer specs (Describe(), spec()) carry no markers, so a
// checkpoint's model_spec is the whole model's and a split model loads the unsplit one's.
//
// Layer i's parameters are named "<ii>_<kind>/<name>" (e.g. "03_dense/kernel"), which is also
// how checkpoints name them. The arena is allocated and initialised in the constructor.
//
// Micro-batches: Forward(x, training, mb) and Backward(dy, mb) keep everything the backward pass
// needs (inputs, outputs, masks, gates, batch statistics, dx buffers) in the MicroBatch, so a
// schedule may run several forward passes before their backward passes (F1 F2 B2 B1). The
// buffers of a MicroBatch are reused by its next pass when the shapes match. Forward(x,
// training) and Backward(dy) use a MicroBatch owned by the model (index 0).
// Thread-safety: one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.hpp"
#include "core/init.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct ModelOptions {
  uint64_t seed = 42;                   // initial weights and dropout masks; same on every rank
  InitKind init = InitKind::kHeNormal;  // dense and conv kernels (LSTM kernels: glorot)
  // Which way of a tensor-parallel group this model is (default: the whole model, T = 1).
  TensorParallel tensor_parallel;
  // Where parameters, activations and gradients live and the kernels run. A device other than
  // the CPU needs its runtime registered (core/backend/device_runtime.hpp; a GPU's:
  // cuda::InstallCudaBackend); the
  // model then copies an input on another device to its own in Forward/Backward. Not with
  // tensor parallelism or embedding layers yet (they read host memory).
  Device device = Device::kCpu;
  // Fuse a ReLU into the max pooling right after it (Layer::AbsorbPrecedingRelu): same outputs,
  // same gradients for finite values, one pass over the larger tensor less each way. The
  // environment's SHARDFLOW_FUSION=off turns it off for a whole program (A/B measurements).
  bool fuse = true;
  // The embedding bags' tables live elsewhere (a parameter server's sparse tables): each
  // declares its table with no rows and computes with a window its holder fills
  // (core/layers/remote_table.hpp, Sequential::RemoteTables).
  bool remote_tables = false;
};

// A contiguous range [begin, end) of a spec's layers: the part of a model one pipeline stage
// holds. end < 0 means "to the last layer".
struct LayerRange {
  int begin = 0;
  int end = -1;
};

// The spec of a preset for a per-sample input shape, or `spec` unchanged when it is not a
// preset name. Presets:
//   linear            flatten, dense:10
//   mlp               flatten, dense:512:col, relu, dense:256:row, relu, dense:10
//                     (784-512-256-10)
//   cnn               conv:32:5x5:same:col, relu, maxpool:2, conv:64:5x5:same:row, relu,
//                     maxpool:2, flatten, dense:1024:col, relu, dense:10:row
//   resnet            conv:16:3x3:same, batchnorm, relu, residual:16, residual:32:2,
//                     residual:64:2, gap, dense:10     (for 28x28 images)
//   resnet50          ResNet-50 v1.5 as torchvision builds it, 1000 classes (224x224x3
//                     images; 25,557,032 parameters): pad:3, conv:64:7x7:valid:s2:nobias,
//                     batchnorm, relu, pad:1, maxpool:3:2, bottleneck:64 x3, bottleneck:128:2,
//                     bottleneck:128 x3, bottleneck:256:2, bottleneck:256 x5,
//                     bottleneck:512:2, bottleneck:512 x2, gap, dense:1000
//   lstm_autoencoder  lstm:64, repeat:T, lstm:64:seq, dense:F   for input (T, F)
// The other classification presets end in 10 classes. The tensor-parallel markers (:col, :row) say
// which layers a T-way model splits; linear, resnet and lstm_autoencoder split nothing.
std::string PresetSpec(const std::string& name, const Shape& input_shape);

// Splits a spec into layer tokens, trimmed; throws Error(kInvalidArgument) on an empty token.
std::vector<std::string> SplitModelSpec(const std::string& spec);

// The saved state of one micro-batch in flight through a Sequential model: one LayerState per
// layer, made by the model on the first Forward that uses it. index() keys the micro-batch's
// dropout masks together with the model's seed and step, so they do not depend on the order the
// micro-batches run in; index 0 draws the masks of a whole batch.
class MicroBatch {
 public:
  explicit MicroBatch(uint64_t index = 0) : index_(index) {}
  MicroBatch(const MicroBatch&) = delete;
  MicroBatch& operator=(const MicroBatch&) = delete;
  MicroBatch(MicroBatch&&) = default;
  MicroBatch& operator=(MicroBatch&&) = default;
  uint64_t index() const { return index_; }
  void set_index(uint64_t index) { index_ = index; }

 private:
  template <typename>
  friend class Sequential;
  uint64_t index_;
  const void* model_ = nullptr;  // the model the states belong to
  std::vector<std::unique_ptr<LayerState>> states_;
  bool forward_done_ = false;     // a Forward ran since the states were made
  std::vector<int64_t> lengths_;  // ForwardContext::lengths of the last Forward
};

template <typename T>
class Sequential {
 public:
  // input_shape is per sample (e.g. {28, 28, 1}). Throws Error(kInvalidArgument) naming the
  // offending token for a bad spec, and Error(kInvalidArgument, key dist.tensor_parallel) naming
  // the layer, its size and T for a spec options.tensor_parallel cannot split: a marked layer
  // whose units / filters / input channels T does not divide, a :row whose input is not a
  // :col's slice, a :col on a slice, a slice reaching a layer that needs its whole input or the
  // model's output, a way outside [0, T), or T > 1 without the sum for T.
  Sequential(const std::string& spec, const Shape& input_shape, const ModelOptions& options = {});
  // Layers [range.begin, range.end) of the spec only (a pipeline stage; with tensor parallelism
  // its input and output may be a way's slice when the range cuts between a :col and its :row):
  // input_shape is still the whole model's input; this model's input is the output of layer
  // range.begin - 1. Layer names, parameter names, ParamSpec::layer, the grads-ready hook's
  // layer index, dropout masks and initial values are those of the whole model, so stage s
  // holds exactly the whole model's layers of its range. Only the range's parameters are allocated.
  // Throws Error(kInvalidArgument) for a range outside [0, number of layers] or an empty one.
  Sequential(const std::string& spec, const Shape& input_shape, const ModelOptions& options,
             LayerRange range);
  Sequential(const Sequential&) = delete;
  Sequential& operator=(const Sequential&) = delete;
  ~Sequential();

  // x is (B, input_shape...); returns (B, output_shape...), valid until the next Forward.
  // training: dropout on, batch norm uses and updates batch statistics.
  Tensor Forward(const Tensor& x, bool training);
  // dy is (B, output_shape...), the loss gradient of the last Forward's output. Accumulates
  // parameter gradients into the arena; after each layer with parameters it calls the grads
  // ready hook with the layer's index (the data-parallel reducer starts buckets from there).
  void Backward(const Tensor& dy);

  // The same for one micro-batch: Forward saves into mb (the returned tensor is mb's buffer,
  // valid until mb's next Forward); Backward uses what mb's last Forward saved and accumulates
  // into the arena. Throws Error(kInvalidArgument) for a Backward before any Forward of mb, and
  // Error(kInternal) when mb was used with another model.
  Tensor Forward(const Tensor& x, bool training, MicroBatch& mb);
  void Backward(const Tensor& dy, MicroBatch& mb);
  // The same, returning the gradient of the model's input (a later pipeline stage sends it to
  // the stage before); the returned tensor is mb's buffer, valid until mb's next Backward.
  Tensor BackwardWithInputGrad(const Tensor& dy, MicroBatch& mb);

  // The step used for dropout masks (set by the training loop before Forward).
  void set_step(uint64_t step) { step_ = step; }
  uint64_t step() const { return step_; }
  void SetGradsReadyHook(std::function<void(int layer)> hook) { hook_ = std::move(hook); }

  Arena<T>& arena() { return arena_; }
  const Arena<T>& arena() const { return arena_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  // The index in the whole spec of this model's layer 0 (0 unless built from a LayerRange),
  // and how many layers the whole spec has.
  int first_layer() const { return first_layer_; }
  int spec_layers() const { return spec_layers_; }
  Layer<T>& layer(int i) { return *layers_.at(i); }
  // How many ReLUs run inside the max pooling after them (ModelOptions::fuse).
  int fused_relus() const { return fused_relus_; }
  const std::string& layer_name(int i) const { return names_.at(i); }
  // This model's input per sample (a stage's: the output of the layer before its range).
  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return shapes_.back(); }
  const Shape& layer_output_shape(int i) const { return shapes_.at(i + 1); }
  // The layer specs joined by ", " (presets expanded; a stage's layers only).
  std::string spec() const;
  // Forward FLOPs per sample of this model (one way's share of a tensor-split model).
  int64_t FlopsPerSample() const;
  // Non-trainable buffers of every layer, named "<layer_name>/<buffer>".
  std::vector<NamedTensor> Buffers();

  // The layers' remote tables (ModelOptions::remote_tables), in layer order; empty otherwise.
  std::vector<RemoteTable<T>*> RemoteTables();

  // A table: index, layer name, spec, output shape, parameters; and the totals.
  std::string Summary() const;

 private:
  Tensor RunBackward(const Tensor& dy, MicroBatch& mb, bool input_grad);

  Shape input_shape_;
  ModelOptions options_;
  Arena<T> arena_;
  std::vector<std::unique_ptr<Layer<T>>> layers_;
  std::vector<std::string> names_;
  std::vector<Shape> shapes_;  // shapes_[0] = input, shapes_[i + 1] = output of layer i
  std::vector<bool> has_params_;
  uint64_t step_ = 0;
  std::function<void(int)> hook_;
  MicroBatch own_mb_;        // the micro-batch of Forward(x, training) / Backward(dy)
  int first_trainable_ = 0;  // no layer before it needs an input gradient
  int fused_relus_ = 0;
  int first_layer_ = 0;  // index in the whole spec of layers_[0]
  int wide_index_ = -1;  // the wide part (wide:N:K:AT:S), which reads the model's input
  int spec_layers_ = 0;  // layers in the whole spec
};

// What each layer of a spec is, without allocating or initialising any parameter (the
// whole model may not fit this process): name, output shape, parameters, forward FLOPs. With
// options.tensor_parallel, one way's (its slices' parameters and FLOPs); the same refusals as
// the constructor.
struct LayerInfo {
  std::string name;  // "03_dense"
  Shape output_shape;
  int64_t parameters = 0;
  int64_t flops_per_sample = 0;
  std::vector<std::pair<std::string, Shape>> params;  // full names ("03_dense/kernel"), shapes
};
std::vector<LayerInfo> DescribeLayers(const std::string& spec, const Shape& input_shape,
                                      const ModelOptions& options = {});

// One layer from one token (see the grammar above). model_input (per sample) resolves
// defaults: repeat's length is model_input[0].
template <typename T>
std::unique_ptr<Layer<T>> MakeLayerFromSpec(const std::string& token, const Shape& model_input,
                                            const ModelOptions& options);

}  // namespace shardflow
