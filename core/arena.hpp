// Flat parameter and gradient arenas (design decision 2).
//
// Every trainable value of a model lives in one contiguous array of T (the parameter arena) and
// its gradient at the same offset of a second array (the gradient arena). Layers declare their
// parameters while the model is built, then hold only ids and reach their memory through the
// arena, so all-reduce, optimizers, checkpoints and the parameter server work on slices of two
// flat arrays, never on per-layer copies.
//
// Layout: parameters are placed in REVERSE layer order (the last layer's parameters at offset
// 0) and, within a layer, in declaration order. Backpropagation finishes the last layer first,
// so gradients become final from the front of the arena to its back, and a gradient bucket (a
// contiguous slice of whole parameters, see Buckets()) is complete as soon as the lowest layer
// it holds has run its backward pass. GradReadyTracker turns per-layer "my gradients are done"
// notifications into per-bucket "this slice can be reduced now" callbacks.
//
// Gradients are zeroed lazily (design decision 57): ZeroGrads() marks every gradient zero
// without touching memory, and the first access writes the zeros: per parameter through
// grad(id), grad_data() and GradView(), all of them through grads(), device_grads() and
// grads_tensor(). GradForOverwrite(id) instead hands a marked gradient to a caller that writes
// every element of it (a GEMM with beta = 0), so those zeros are neither written nor read back:
// a dense layer's weight gradient, megabytes, otherwise memset and then read by a GEMM that
// adds to it.
//
// Thread-safety: building and allocating are single-threaded. After Allocate(), distinct slices
// may be read and written by distinct threads (e.g. a comm thread reducing a finished bucket
// while backprop writes the next one); the zero marks are per parameter, set by ZeroGrads and
// cleared by the first access, on the thread running backprop; even the const accessors
// (grads() const) write them, so two threads must not read gradients through one arena at once
// while any is marked. A pointer kept from an earlier access (a reducer's) sees a marked
// gradient's old values: materialise it (grad(id)) first.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace shardflow {

// One declared parameter.
struct ParamSpec {
  std::string name;        // "kernel", "bias", "gamma", ...
  int layer = 0;           // index of the owning layer in the model (0 = first)
  std::string layer_name;  // "03_dense"
  Shape shape;
  bool decay = true;   // weight decay applies (kernels yes, biases and norms no)
  int64_t offset = 0;  // element offset in the arena (valid after Allocate)
  int64_t size = 0;    // NumElements(shape)
  // A tensor-parallel slice of a larger parameter: this rank holds [split_begin, split_begin +
  // shape[split_axis]) along split_axis of full_shape. split_axis < 0: the whole parameter
  // (full_shape is then empty; use FullShape()).
  int split_axis = -1;
  int64_t split_begin = 0;
  Shape full_shape;
  std::string FullName() const { return layer_name + "/" + name; }
  const Shape& FullShape() const { return split_axis < 0 ? shape : full_shape; }
};

// A contiguous slice of the gradient arena made of whole parameters.
struct GradBucket {
  int index = 0;
  int64_t offset = 0;    // elements
  int64_t size = 0;      // elements
  int lowest_layer = 0;  // the bucket is complete once this layer's backward has run
  int highest_layer = 0;
  std::vector<int> params;  // parameter ids, in arena order
};

template <typename T>
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Declares a parameter of `layer`; returns its id. REQUIRES: !allocated().
  int Declare(int layer, const std::string& layer_name, const std::string& name, Shape shape,
              bool decay) {
    if (allocated()) {
      throw Error(ErrorCode::kInternal, "parameter " + layer_name + "/" + name +
                                            " declared after the arena was allocated");
    }
    ParamSpec spec;
    spec.name = name;
    spec.layer = layer;
    spec.layer_name = layer_name;
    spec.shape = std::move(shape);
    spec.decay = decay;
    spec.size = NumElements(spec.shape);
    specs_.push_back(std::move(spec));
    return static_cast<int>(specs_.size()) - 1;
  }

  // Records that parameter `id` is a tensor-parallel slice: [begin, begin + shape[axis]) along
  // `axis` of full_shape. REQUIRES: !allocated(), full_shape equal to the parameter's shape
  // except along axis.
  void SetSplit(int id, int axis, int64_t begin, Shape full_shape) {
    ParamSpec& s = specs_.at(id);
    if (allocated() || axis < 0 || axis >= static_cast<int>(s.shape.size()) ||
        full_shape.size() != s.shape.size() || begin < 0 ||
        begin + s.shape[axis] > full_shape[axis]) {
      throw Error(ErrorCode::kInternal, "bad tensor-parallel split of " + s.FullName() + " " +
                                            ShapeToString(s.shape) + " in " +
                                            ShapeToString(full_shape));
    }
    s.split_axis = axis;
    s.split_begin = begin;
    s.full_shape = std::move(full_shape);
  }

  // Lays out every declared parameter (reverse layer order) and allocates both arenas,
  // zero-filled (64-byte aligned on the CPU), on `device`.
  void Allocate(Device device = Device::kCpu) {
    std::vector<int> order(specs_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return specs_[a].layer > specs_[b].layer; });
    int64_t offset = 0;
    for (int id : order) {
      specs_[id].offset = offset;
      offset += specs_[id].size;
    }
    order_ = std::move(order);
    size_ = offset;
    params_ = Tensor(DTypeOf<T>(), {size_}, device);
    grads_ = Tensor(DTypeOf<T>(), {size_}, device);
    zero_pending_.assign(specs_.size(), 0);
    allocated_ = true;
  }

  // Moves the gradient arena into caller-owned memory of size() elements, 64-byte aligned
  // (a data-parallel job puts it in memory its peers can read: comm/allreduce_shm.hpp), copying
  // the current gradients. Layers look gradients up through grad(), so nothing else moves.
  // REQUIRES: allocated(); storage outlives every later use of the gradients.
  void UseGradStorage(T* storage) {
    if (!allocated()) throw Error(ErrorCode::kInternal, "gradient storage set before Allocate");
    const T* from = grads();
    std::copy(from, from + size_, storage);
    grads_ = Tensor::View(storage, DTypeOf<T>(), {size_});
  }

  // Initialisation streams: a parameter's initial values are drawn from stream
  // init_stream(id) = id + base, so a model built from a range of a spec's layers (one pipeline
  // stage: Sequential with a LayerRange) sets base to the number of parameters the layers
  // before the range declare, and initialises exactly as the whole model does.
  void set_init_stream_base(int base) { stream_base_ = base; }
  uint64_t init_stream(int id) const { return static_cast<uint64_t>(id + stream_base_); }

  bool allocated() const { return allocated_; }
  int64_t size() const { return size_; }  // elements in each arena
  int num_params() const { return static_cast<int>(specs_.size()); }
  const ParamSpec& spec(int id) const { return specs_.at(id); }
  const std::vector<ParamSpec>& specs() const { return specs_; }
  // Parameter ids in arena order (last layer first).
  const std::vector<int>& arena_order() const { return order_; }

  // Host pointers: throw on an arena on another device (checkpoints, collectives and tests
  // read parameters here; a device arena is copied to the host first).
  T* params() { return params_.data<T>(); }
  const T* params() const { return params_.data<T>(); }
  T* grads() {
    MaterializeAll();
    return grads_.data<T>();
  }
  const T* grads() const {
    MaterializeAll();
    return grads_.data<T>();
  }
  Tensor& params_tensor() { return params_; }
  Tensor& grads_tensor() {
    MaterializeAll();
    return grads_;
  }
  Device device() const { return params_.device(); }

  // Device pointers (valid on device()), for kernels: layers and optimizers use these.
  T* device_params() { return params_.device_data<T>(); }
  T* device_grads() {
    MaterializeAll();
    return grads_.device_data<T>();
  }
  T* param(int id) { return device_params() + specs_[id].offset; }
  const T* param(int id) const { return params_.device_data<T>() + specs_[id].offset; }
  T* grad(int id) {
    Materialize(id);
    return grads_.device_data<T>() + specs_[id].offset;
  }
  // Parameter id's gradient for a caller that overwrites every element when `overwrite` (the
  // gradient is marked zero: write it, do not add to it) and adds to it otherwise.
  struct GradWrite {
    T* data;
    bool overwrite;
  };
  GradWrite GradForOverwrite(int id) {
    const bool overwrite = zero_pending_.at(static_cast<size_t>(id)) != 0;
    zero_pending_[static_cast<size_t>(id)] = 0;
    return {grads_.device_data<T>() + specs_[id].offset, overwrite};
  }
  T* param_data(const ParamSpec& s) { return device_params() + s.offset; }
  T* grad_data(const ParamSpec& s) { return grad(IdOf(s)); }
  // Views shaped like the parameter, on device().
  Tensor ParamView(int id) {
    return Tensor::View(param(id), DTypeOf<T>(), specs_[id].shape, device());
  }
  Tensor GradView(int id) {
    return Tensor::View(grad(id), DTypeOf<T>(), specs_[id].shape, device());
  }

  // Every gradient becomes zero (lazily: see the top of this file).
  void ZeroGrads() { std::fill(zero_pending_.begin(), zero_pending_.end(), uint8_t{1}); }

  // Splits the arena into buckets of whole parameters: a bucket is closed as soon as it holds
  // at least bucket_bytes (a parameter larger than bucket_bytes gets a bucket of its own), and
  // bucket_bytes = 0 gives one bucket per parameter. An empty
  // arena has no buckets.
  std::vector<GradBucket> Buckets(size_t bucket_bytes) const {
    std::vector<GradBucket> out;
    GradBucket cur;
    auto close = [&]() {
      if (cur.params.empty()) return;
      cur.index = static_cast<int>(out.size());
      out.push_back(cur);
      cur = GradBucket();
    };
    for (int id : order_) {
      const ParamSpec& s = specs_[id];
      if (s.size == 0) continue;
      if (cur.params.empty()) {
        cur.offset = s.offset;
        cur.lowest_layer = s.layer;
        cur.highest_layer = s.layer;
      }
      cur.params.push_back(id);
      cur.size += s.size;
      cur.lowest_layer = std::min(cur.lowest_layer, s.layer);
      cur.highest_layer = std::max(cur.highest_layer, s.layer);
      if (static_cast<size_t>(cur.size) * sizeof(T) >= bucket_bytes) close();
    }
    close();
    return out;
  }

 private:
  int IdOf(const ParamSpec& s) const {
    const std::less<const ParamSpec*> before;  // a total order, even for another array's spec
    if (before(&s, specs_.data()) || !before(&s, specs_.data() + specs_.size())) {
      throw Error(ErrorCode::kInternal, "parameter " + s.FullName() + " is not this arena's");
    }
    return static_cast<int>(&s - specs_.data());
  }
  // Writes the zeros of a marked gradient. Const for the const accessors: the marks and the
  // gradient memory change, not the gradient's value (zero either way).
  void Materialize(int id) const {
    uint8_t& pending = zero_pending_.at(static_cast<size_t>(id));
    if (pending == 0) return;
    pending = 0;
    const ParamSpec& s = specs_[id];
    if (s.size == 0) return;
    T* g = const_cast<T*>(grads_.device_data<T>()) + s.offset;
    if (device() == Device::kCpu) {
      std::memset(g, 0, static_cast<size_t>(s.size) * sizeof(T));
    } else {
      DeviceMemoryFor(device()).Zero(g, static_cast<size_t>(s.size) * sizeof(T));
    }
  }
  void MaterializeAll() const {
    for (size_t id = 0; id < zero_pending_.size(); ++id) {
      if (zero_pending_[id] != 0) Materialize(static_cast<int>(id));
    }
  }

  std::vector<ParamSpec> specs_;
  std::vector<int> order_;
  int64_t size_ = 0;
  bool allocated_ = false;
  int stream_base_ = 0;
  Tensor params_;
  Tensor grads_;
  mutable std::vector<uint8_t> zero_pending_;  // per parameter id: 1 = zero, not yet written
};

// Turns per-layer completion notices into per-bucket ready callbacks.
//
//   GradReadyTracker tracker(arena.Buckets(25 << 20),
//                            [&](const GradBucket& b) { StartReduce(b); }, arena.specs());
//   model.SetGradsReadyHook([&](int layer) { tracker.LayerDone(layer); });
//   tracker.Reset();
//   model.Backward(dy);  // bucket callbacks fire during Backward, front of the arena first
//
// A bucket fires once all the layers it holds have reported, whatever order they report in.
// Not thread-safe: call LayerDone from the thread running backprop.
class GradReadyTracker {
 public:
  using Callback = std::function<void(const GradBucket&)>;
  GradReadyTracker(std::vector<GradBucket> buckets, Callback on_ready,
                   const std::vector<ParamSpec>& specs)
      : buckets_(std::move(buckets)), on_ready_(std::move(on_ready)) {
    for (const GradBucket& b : buckets_) {
      std::vector<int> layers;
      for (int id : b.params) layers.push_back(specs.at(id).layer);
      std::sort(layers.begin(), layers.end());
      layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
      bucket_layers_.push_back(layers);
    }
    Reset();
  }

  // Starts a new backward pass: no layer done, no bucket fired.
  void Reset() {
    pending_.clear();
    for (const auto& l : bucket_layers_) pending_.push_back(static_cast<int>(l.size()));
  }

  // Layer `layer` has written all of its gradients for this pass.
  void LayerDone(int layer) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const auto& l = bucket_layers_[b];
      if (pending_[b] > 0 && std::binary_search(l.begin(), l.end(), layer)) {
        if (--pending_[b] == 0) on_ready_(buckets_[b]);
      }
    }
  }

  // Buckets not yet fired in this pass.
  int pending_buckets() const {
    return static_cast<int>(
        std::count_if(pending_.begin(), pending_.end(), [](int p) { return p > 0; }));
  }
  const std::vector<GradBucket>& buckets() const { return buckets_; }

 private:
  std::vector<GradBucket> buckets_;
  Callback on_ready_;
  std::vector<std::vector<int>> bucket_layers_;
  std::vector<int> pending_;
};

}  // namespace shardflow
