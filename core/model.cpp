#include "core/model.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "core/environment.hpp"
#include "core/layers/activation.hpp"
#include "core/layers/attention.hpp"
#include "core/layers/batch_norm.hpp"
#include "core/layers/conv2d.hpp"
#include "core/layers/dense.hpp"
#include "core/layers/dropout.hpp"
#include "core/layers/embedding.hpp"
#include "core/layers/embedding_bag.hpp"
#include "core/layers/layer_norm.hpp"
#include "core/layers/lm_head.hpp"
#include "core/layers/lstm.hpp"
#include "core/layers/pooling.hpp"
#include "core/layers/reshape.hpp"
#include "core/layers/residual.hpp"
#include "core/layers/sequence_pool.hpp"
#include "core/layers/token_embedding.hpp"
#include "core/layers/transformer_block.hpp"
#include "core/trace.hpp"

namespace shardflow {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(Trim(cur));
  return out;
}

[[noreturn]] void BadToken(const std::string& token, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "bad layer spec '" + token + "': " + why,
              {.key = "model", .hint = "see core/model.hpp for the layer grammar"});
}

int64_t ParsePositive(const std::string& token, const std::string& text, const char* what) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v <= 0) {
    BadToken(token, std::string(what) + " must be a positive integer, got '" + text + "'");
  }
  return v;
}

void ExpectArgs(const std::string& token, const std::vector<std::string>& parts, size_t min,
                size_t max) {
  if (parts.size() - 1 < min || parts.size() - 1 > max) {
    BadToken(token, "expected " + std::to_string(min) +
                        (max != min ? " to " + std::to_string(max) : "") + " argument(s)");
  }
}

// The tensor-parallel marker of a dense or conv token.
TpSplit ParseSplit(const std::string& token, const std::string& text) {
  if (text == "col") return TpSplit::kColumn;
  if (text == "row") return TpSplit::kRow;
  BadToken(token, "expected the tensor-parallel marker col or row, got '" + text + "'");
}

// ResNet-50 v1.5 as torchvision builds it (25,557,032 parameters at 1000 classes): the stem
// conv 7x7/2 and max pool 3x3/2 with Keras' explicit zero padding, then bottleneck stages of
// 3, 4, 6 and 3 blocks (64, 128, 256, 512 filters, x4 out; stride 2 on the first block's 3x3
// from the second stage on), global average pooling and a 1000-way dense layer.
std::string ResNet50Spec() {
  std::string spec = "pad:3, conv:64:7x7:valid:s2:nobias, batchnorm, relu, pad:1, maxpool:3:2";
  const int64_t blocks[] = {3, 4, 6, 3}, filters[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      spec += ", bottleneck:" + std::to_string(filters[stage]);
      if (stage > 0 && b == 0) spec += ":2";
    }
  }
  return spec + ", gap, dense:1000";
}

}  // namespace

std::string PresetSpec(const std::string& name, const Shape& input_shape) {
  if (name == "linear") return "flatten, dense:10";
  if (name == "mlp") return "flatten, dense:512:col, relu, dense:256:row, relu, dense:10";
  if (name == "cnn") {
    return "conv:32:5x5:same:col, relu, maxpool:2, conv:64:5x5:same:row, relu, maxpool:2, "
           "flatten, dense:1024:col, relu, dense:10:row";
  }
  if (name == "resnet") {
    return "conv:16:3x3:same, batchnorm, relu, residual:16, residual:32:2, residual:64:2, gap, "
           "dense:10";
  }
  if (name == "resnet50") return ResNet50Spec();
  if (name == "lstm_autoencoder") {
    if (input_shape.size() != 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  "lstm_autoencoder needs sequence input (time, features), got " +
                      ShapeToString(input_shape),
                  {.key = "model"});
    }
    return "lstm:64, repeat:" + std::to_string(input_shape[0]) +
           ", lstm:64:seq, dense:" + std::to_string(input_shape[1]);
  }
  return name;
}

std::vector<std::string> SplitModelSpec(const std::string& spec) {
  std::vector<std::string> tokens = Split(spec, ',');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "empty layer #" + std::to_string(i) + " in model spec '" + spec + "'",
                  {.key = "model"});
    }
  }
  return tokens;
}

namespace {

// A dropout rate: a number in [0, 1).
double ParseRate(const std::string& token, const std::string& text) {
  size_t used = 0;
  double rate = -1;
  try {
    rate = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(rate >= 0.0 && rate < 1.0)) {
    BadToken(token, "a dropout rate must be a number in [0, 1)");
  }
  return rate;
}

// The layers of sequence models (transformers), or null when `p[0]` names none of them.
template <typename T>
std::unique_ptr<Layer<T>> MakeSequenceLayer(const std::string& token,
                                            const std::vector<std::string>& p) {
  const std::string& kind = p[0];
  if (kind == "tokens") {
    ExpectArgs(token, p, 2, 3);
    const int64_t pad =
        p.size() < 4 ? -1 : (p[3] == "0" ? 0 : ParsePositive(token, p[3], "pad id"));
    return MakeTokenEmbedding<T>({.vocabulary = ParsePositive(token, p[1], "vocabulary"),
                                  .dim = ParsePositive(token, p[2], "dimensions"),
                                  .pad = pad});
  }
  if (kind == "layernorm") {
    ExpectArgs(token, p, 0, 0);
    return MakeLayerNorm<T>({});
  }
  if (kind == "lmhead") {
    ExpectArgs(token, p, 0, 0);
    return MakeLmHead<T>();
  }
  if (kind == "attention" || kind == "block") {
    ExpectArgs(token, p, 1, kind == "block" ? 3 : 2);
    const int64_t heads = ParsePositive(token, p[1], "heads");
    size_t next = 2;
    const bool causal = p.size() > next && p[next] == "causal";
    if (causal) ++next;
    double dropout = 0;  // block: a dropout rate last (block:4:0.1, block:4:causal:0.1)
    if (kind == "block" && p.size() > next) dropout = ParseRate(token, p[next++]);
    if (p.size() > next) {
      BadToken(token, kind == "block" ? "the optional arguments are 'causal', then a dropout rate"
                                      : "the optional second argument is 'causal'");
    }
    if (kind == "block") {
      return MakeTransformerBlock<T>({.heads = heads, .causal = causal, .dropout = dropout});
    }
    return MakeAttention<T>({.heads = heads, .causal = causal});
  }
  if (kind == "seqpool") {
    ExpectArgs(token, p, 1, 1);
    if (p[1] != "mean" && p[1] != "first")
      BadToken(token, "expected seqpool:mean or seqpool:first");
    return MakeSequencePool<T>(p[1] == "mean" ? SequencePoolKind::kMean : SequencePoolKind::kFirst);
  }
  return nullptr;
}

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeLayerFromSpec(const std::string& token, const Shape& model_input,
                                            const ModelOptions& options) {
  const std::vector<std::string> p = Split(token, ':');
  const std::string& kind = p[0];
  if (kind == "dense") {
    ExpectArgs(token, p, 1, 2);
    const TpSplit split = p.size() == 3 ? ParseSplit(token, p[2]) : TpSplit::kNone;
    return MakeDense<T>(
        {.units = ParsePositive(token, p[1], "units"), .init = options.init, .split = split});
  }
  if (kind == "embedding") {
    ExpectArgs(token, p, 3, 3);
    const int64_t at = p[3] == "0" ? 0 : ParsePositive(token, p[3], "column");
    return MakeEmbedding<T>({.rows = ParsePositive(token, p[1], "rows"),
                             .dim = ParsePositive(token, p[2], "dimensions"),
                             .at = at});
  }
  if (kind == "wide") {
    ExpectArgs(token, p, 4, 4);
    return MakeEmbeddingBag<T>({.rows = ParsePositive(token, p[1], "rows"),
                                .dim = ParsePositive(token, p[2], "outputs"),
                                .at = p[3] == "0" ? 0 : ParsePositive(token, p[3], "column"),
                                .bag_slots = {ParsePositive(token, p[4], "slots")},
                                .wide = true});
  }
  if (kind == "embedbag") {
    ExpectArgs(token, p, 4, 5);
    EmbeddingBagOptions o{.rows = ParsePositive(token, p[1], "rows"),
                          .dim = ParsePositive(token, p[2], "dimensions"),
                          .at = p[3] == "0" ? 0 : ParsePositive(token, p[3], "column"),
                          .bag_slots = ParseBags(p[4], token)};
    if (p.size() == 6) {
      if (p[5] == "mean") {
        o.combiner = BagCombiner::kMean;
      } else if (p[5] == "sqrtn") {
        o.combiner = BagCombiner::kSqrtN;
      } else if (p[5] != "sum") {
        BadToken(token, "the combiner is sum, mean or sqrtn");
      }
    }
    return MakeEmbeddingBag<T>(o);
  }
  if (auto layer = MakeSequenceLayer<T>(token, p)) return layer;
  if (kind == "conv") {
    ExpectArgs(token, p, 2, 5);
    Conv2DOptions o{.filters = ParsePositive(token, p[1], "filters"), .init = options.init};
    const auto x = p[2].find('x');
    if (x == std::string::npos) BadToken(token, "kernel size must look like 5x5");
    o.kernel_h = ParsePositive(token, p[2].substr(0, x), "kernel height");
    o.kernel_w = ParsePositive(token, p[2].substr(x + 1), "kernel width");
    for (size_t i = 3; i < p.size(); ++i) {
      if (p[i] == "same") {
        o.same_padding = true;
      } else if (p[i] == "valid") {
        o.same_padding = false;
      } else if (p[i] == "nobias") {
        o.use_bias = false;
      } else if (p[i].size() > 1 && p[i][0] == 's') {
        o.stride = ParsePositive(token, p[i].substr(1), "stride");
      } else if (i + 1 == p.size() && (p[i] == "col" || p[i] == "row")) {
        o.split = ParseSplit(token, p[i]);
      } else {
        BadToken(token,
                 "expected same, valid, sN (stride), nobias or a last col|row, got '" + p[i] + "'");
      }
    }
    return MakeConv2D<T>(o);
  }
  if (kind == "maxpool" || kind == "avgpool") {
    ExpectArgs(token, p, 1, 2);
    Pool2DOptions o{.size = ParsePositive(token, p[1], "pool size"), .max = kind == "maxpool"};
    if (p.size() == 3) o.stride = ParsePositive(token, p[2], "stride");
    return MakePool2D<T>(o);
  }
  if (kind == "pad") {
    ExpectArgs(token, p, 1, 1);
    return MakeZeroPad<T>(ParsePositive(token, p[1], "padding"));
  }
  if (kind == "gap") {
    ExpectArgs(token, p, 0, 0);
    return MakeGlobalAvgPool<T>();
  }
  if (kind == "relu" || kind == "gelu" || kind == "tanh" || kind == "sigmoid") {
    ExpectArgs(token, p, 0, 0);
    return MakeActivation<T>(ParseActivation(kind));
  }
  if (kind == "flatten") {
    ExpectArgs(token, p, 0, 0);
    return MakeFlatten<T>();
  }
  if (kind == "dropout") {
    ExpectArgs(token, p, 1, 1);
    return MakeDropout<T>(ParseRate(token, p[1]));
  }
  if (kind == "batchnorm") {
    ExpectArgs(token, p, 0, 0);
    return MakeBatchNorm<T>({});
  }
  if (kind == "residual" || kind == "bottleneck") {
    ExpectArgs(token, p, 1, 2);
    ResidualOptions o{.filters = ParsePositive(token, p[1], "filters"),
                      .bottleneck = kind == "bottleneck"};
    if (p.size() == 3) o.stride = ParsePositive(token, p[2], "stride");
    return MakeResidual<T>(o);
  }
  if (kind == "lstm") {
    ExpectArgs(token, p, 1, 2);
    LstmOptions o{.units = ParsePositive(token, p[1], "units")};
    if (p.size() == 3) {
      if (p[2] != "seq") BadToken(token, "the optional second argument is 'seq'");
      o.return_sequences = true;
    }
    return MakeLstm<T>(o);
  }
  if (kind == "repeat") {
    ExpectArgs(token, p, 0, 1);
    if (p.size() == 2) return MakeRepeatVector<T>(ParsePositive(token, p[1], "count"));
    if (model_input.size() != 2) {
      BadToken(token, "repeat without a count needs sequence model input (time, features)");
    }
    return MakeRepeatVector<T>(model_input[0]);
  }
  BadToken(token, "unknown layer kind '" + kind + "'");
}

namespace {

// The input a layer is built on: the running shape, or for the wide part of a wide-and-deep
// model (wide:N:K:AT:S, the spec's last token) the model's input, its output then the shape of
// the layers' output it adds to. Throws Error(kInvalidArgument) naming the token otherwise.
template <typename T>
Shape BuildShapeFor(const Layer<T>& layer, const std::string& token, size_t i, size_t n,
                    const Shape& shape, const Shape& model_input) {
  if (layer.kind() != "wide") return shape;
  if (i + 1 != n || i == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "'" + token +
                    "' must be the last layer of a model with other layers: it adds a "
                    "linear model of the input's ids to their output",
                {.key = "model"});
  }
  return model_input;
}

// sum += h, elementwise (the wide part's output buffer, which its backward pass does not read).
template <typename T>
Tensor AddInto(Tensor sum, const Tensor& h) {
  CheckHostTensor(h, "wide");
  T* s = sum.template data<T>();
  const T* a = h.template data<T>();
  for (int64_t i = 0; i < sum.num_elements(); ++i) s[i] += a[i];
  return sum;
}

void CheckWideOutput(const std::string& token, const Shape& wide, const Shape& deep) {
  if (wide != deep) {
    throw Error(ErrorCode::kInvalidArgument,
                "'" + token + "' gives " + ShapeToString(wide) + " per sample, and the layers " +
                    "before it end in " + ShapeToString(deep) + ": K must be their width",
                {.key = "model"});
  }
}

// SHARDFLOW_FUSION: on (or unset) fuses as ModelOptions::fuse says, off never fuses.
bool FusionFromEnv() {
  const std::string v = env::Text("SHARDFLOW_FUSION").value_or("");
  if (v.empty() || v == "on") return true;
  if (v == "off") return false;
  throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_FUSION '" + v + "'",
              {.hint = "on or off, or unset for on"});
}

// Throws Error(kInvalidArgument, key dist.tensor_parallel) for a way outside [0, ways) or
// ways > 1 without the sum callback for T.
template <typename T>
void CheckTensorParallelOptions(const TensorParallel& tp) {
  const bool has_sum =
      std::is_same_v<T, float> ? static_cast<bool>(tp.sum_float) : static_cast<bool>(tp.sum_double);
  std::string why;
  if (tp.ways < 1 || tp.way < 0 || tp.way >= tp.ways) {
    why = "way " + std::to_string(tp.way) + " is not one of T = " + std::to_string(tp.ways);
  } else if (tp.ways > 1 && !has_sum) {
    why = std::string("T = ") + std::to_string(tp.ways) + " needs the " +
          (std::is_same_v<T, float> ? "sum_float" : "sum_double") + " callback";
  }
  if (!why.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "tensor-parallel model: " + why,
                {.key = kTensorParallelKey});
  }
}

}  // namespace

template <typename T>
Sequential<T>::Sequential(const std::string& spec, const Shape& input_shape,
                          const ModelOptions& options)
    : Sequential(spec, input_shape, options, LayerRange{}) {}

template <typename T>
Sequential<T>::Sequential(const std::string& spec, const Shape& input_shape,
                          const ModelOptions& options, LayerRange range)
    : input_shape_(input_shape), options_(options) {
  for (int64_t d : input_shape) {
    if (d <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "model input shape must be positive, got " + ShapeToString(input_shape));
    }
  }
  const std::vector<std::string> tokens = SplitModelSpec(PresetSpec(Trim(spec), input_shape));
  const int n = static_cast<int>(tokens.size());
  const int end = range.end < 0 ? n : range.end;
  if (range.begin < 0 || range.begin >= end || end > n) {
    throw Error(ErrorCode::kInvalidArgument,
                "layer range [" + std::to_string(range.begin) + ", " + std::to_string(end) +
                    ") is not a non-empty part of a model with " + std::to_string(n) + " layers",
                {.key = "model"});
  }
  first_layer_ = range.begin;
  spec_layers_ = n;
  // Padding is found by the first layer (tokens:V:D:PAD); a later pipeline stage would not see
  // it and attend to the padding.
  if (range.begin > 0 && std::count(tokens[0].begin(), tokens[0].end(), ':') == 3 &&
      tokens[0].rfind("tokens:", 0) == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "a model of padded sequences (" + tokens[0] +
                    ") cannot be cut into pipeline stages yet: the padding is known on the first "
                    "stage only",
                {.key = "dist.pipeline_stages", .hint = "tensor or data parallelism split it"});
  }
  const TensorParallel& tp = options_.tensor_parallel;
  CheckTensorParallelOptions<T>(tp);
  const DeviceScope on_device(options.device);  // buffers and initial values on the device
  // The layers before the range are built for their shapes only: their parameters are declared
  // in an arena that is never allocated, and counted so the range initialises as in the whole
  // model. The layers after the range are not needed at all. `split`: the activation is a
  // tensor-parallel way's slice of its last dimension.
  Arena<T> before_range;
  Shape shape = input_shape;
  bool split = false;
  for (int i = 0; i < end; ++i) {
    auto layer = MakeLayerFromSpec<T>(tokens[i], input_shape, options);
    std::ostringstream name;
    name << std::setw(2) << std::setfill('0') << i << '_' << layer->kind();
    const bool inside = i >= range.begin;
    if (i == range.begin) {
      arena_.set_init_stream_base(before_range.num_params());
      input_shape_ = shape;
      shapes_.push_back(shape);
    }
    const TpRole role = layer->tp_role();
    CheckTensorSplit(role, split, name.str(), tokens[i], ShapeToString(shape), tp.ways);
    Arena<T>& arena = inside ? arena_ : before_range;
    BuildContext<T> ctx{.arena = &arena,
                        .layer_index = i,
                        .layer_name = name.str(),
                        .tp = &options_.tensor_parallel,
                        .input_split = split,
                        .remote_tables = options.remote_tables};
    const int declared = arena.num_params();
    const Shape in = BuildShapeFor(*layer, tokens[i], static_cast<size_t>(i),
                                   static_cast<size_t>(n), shape, input_shape);
    const Shape before = shape;
    const bool wide = layer->kind() == "wide";
    if (wide && range.begin > 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "a wide-and-deep model (" + tokens[i] +
                      ") cannot be cut into pipeline stages: "
                      "its wide part reads the model's input on the last stage",
                  {.key = "dist.pipeline_stages", .hint = "tensor or data parallelism split it"});
    }
    try {
      shape = layer->Build(in, ctx);
    } catch (const Error& e) {
      if (e.context().key == kTensorParallelKey) throw;  // it names the layer, size and T
      throw Error(ErrorCode::kInvalidArgument,
                  "layer " + name.str() + " ('" + tokens[i] + "') on input " + ShapeToString(in) +
                      ": " + e.what(),
                  {.key = "model"});
    }
    if (wide) {
      CheckWideOutput(tokens[i], shape, before);
      wide_index_ = static_cast<int>(layers_.size());
    }
    split = role == TpRole::kColumn || (role == TpRole::kSliceWise && split);
    if (!inside) continue;
    shapes_.push_back(shape);
    has_params_.push_back(arena.num_params() > declared);
    names_.push_back(name.str());
    layers_.push_back(std::move(layer));
  }
  if (split && end == n) {
    CheckTensorSplit(TpRole::kReplicated, split, "output", "the model's output",
                     ShapeToString(shape), tp.ways);
  }
  if (options.fuse && FusionFromEnv()) {
    for (size_t i = 1; i < layers_.size(); ++i) {
      if (layers_[i - 1]->kind() == "relu" && layers_[i]->AbsorbPrecedingRelu()) {
        layers_[i - 1]->PassThrough();
        ++fused_relus_;
      }
    }
  }
  arena_.Allocate(options.device);
  for (auto& layer : layers_) layer->Initialize(options.seed);
  first_trainable_ = num_layers();
  for (int i = 0; i < num_layers(); ++i) {
    if (has_params_[i]) {
      first_trainable_ = i;
      break;
    }
  }
}

template <typename T>
Sequential<T>::~Sequential() = default;

template <typename T>
Tensor Sequential<T>::Forward(const Tensor& x, bool training) {
  return Forward(x, training, own_mb_);
}

template <typename T>
void Sequential<T>::Backward(const Tensor& dy) {
  Backward(dy, own_mb_);
}

template <typename T>
Tensor Sequential<T>::Forward(const Tensor& x, bool training, MicroBatch& mb) {
  // A token-sequence model also takes batches shorter than its context (CheckSequenceInput).
  if (!layers_.empty() && layers_[0]->kind() == "tokens") {
    CheckSequenceInput(x, input_shape_, "model input", 1);
  } else {
    CheckInput(x, input_shape_, "model input");
  }
  if (mb.model_ == nullptr) {
    mb.states_.clear();
    for (auto& layer : layers_) mb.states_.push_back(layer->NewState());
    mb.model_ = this;
  } else if (mb.model_ != this) {
    throw Error(ErrorCode::kInternal,
                "micro-batch " + std::to_string(mb.index()) + " was made for another model");
  }
  ForwardContext ctx{
      .training = training, .seed = options_.seed, .step = step_, .micro_batch = mb.index()};
  const DeviceScope on_device(options_.device);
  Tensor h = x.To(options_.device);
  if (!layers_.empty() && layers_[0]->SequenceLengths(h, &mb.lengths_)) ctx.lengths = &mb.lengths_;
  const Tensor input = wide_index_ >= 0 ? h : Tensor();  // the wide part reads the input
  for (size_t i = 0; i < layers_.size(); ++i) {
    const NamedTraceScope span(names_[i]);  // per layer, inside the caller's "forward"
    if (static_cast<int>(i) == wide_index_) {
      h = AddInto<T>(layers_[i]->Forward(input, ctx, *mb.states_[i]), h);
      continue;
    }
    h = layers_[i]->Forward(h, ctx, *mb.states_[i]);
  }
  mb.forward_done_ = true;
  return h;
}

template <typename T>
void Sequential<T>::Backward(const Tensor& dy, MicroBatch& mb) {
  RunBackward(dy, mb, /*input_grad=*/false);
}

template <typename T>
Tensor Sequential<T>::BackwardWithInputGrad(const Tensor& dy, MicroBatch& mb) {
  return RunBackward(dy, mb, /*input_grad=*/true);
}

template <typename T>
Tensor Sequential<T>::RunBackward(const Tensor& dy, MicroBatch& mb, bool input_grad) {
  CheckSequenceInput(dy, shapes_.back(), "model output gradient");
  if (mb.model_ != this || !mb.forward_done_) {
    throw Error(ErrorCode::kInvalidArgument,
                "backward pass of micro-batch " + std::to_string(mb.index()) +
                    (mb.model_ != nullptr && mb.model_ != this ? " made for another model"
                                                               : " before its forward pass"));
  }
  const DeviceScope on_device(options_.device);
  Tensor g = dy.To(options_.device);
  for (int i = num_layers() - 1; i >= 0; --i) {
    const NamedTraceScope span(names_[i]);  // per layer, inside the caller's "backward"
    if (i == wide_index_) {                 // its output gradient is the layers' too; ids take none
      layers_[i]->Backward(g, /*need_dx=*/false, *mb.states_[i]);
    } else {
      g = layers_[i]->Backward(g, input_grad || i > first_trainable_, *mb.states_[i]);
    }
    if (hook_ && has_params_[i]) hook_(first_layer_ + i);
  }
  return input_grad ? g : Tensor();
}

template <typename T>
std::string Sequential<T>::spec() const {
  std::string s;
  for (const auto& layer : layers_) s += (s.empty() ? "" : ", ") + layer->Describe();
  return s;
}

template <typename T>
int64_t Sequential<T>::FlopsPerSample() const {
  int64_t f = 0;
  for (const auto& layer : layers_) f += layer->FlopsPerSample();
  return f;
}

template <typename T>
std::vector<NamedTensor> Sequential<T>::Buffers() {
  std::vector<NamedTensor> out;
  for (int i = 0; i < num_layers(); ++i)
    for (NamedTensor b : layers_[i]->Buffers()) out.push_back({names_[i] + "/" + b.name, b.tensor});
  return out;
}

template <typename T>
std::vector<RemoteTable<T>*> Sequential<T>::RemoteTables() {
  std::vector<RemoteTable<T>*> out;
  for (auto& layer : layers_) {
    if (RemoteTable<T>* t = layer->remote_table()) out.push_back(t);
  }
  return out;
}

template <typename T>
std::string Sequential<T>::Summary() const {
  std::vector<int64_t> counts(layers_.size(), 0);
  for (const ParamSpec& s : arena_.specs()) counts[s.layer] += s.size;
  std::ostringstream out;
  out << std::left << std::setw(16) << "layer" << std::setw(22) << "spec" << std::setw(18)
      << "output shape" << std::right << std::setw(12) << "parameters"
      << "\n";
  out << std::left << std::setw(16) << "input" << std::setw(22) << "" << std::setw(18)
      << ShapeToString(input_shape_) << std::right << std::setw(12) << 0 << "\n";
  for (size_t i = 0; i < layers_.size(); ++i) {
    out << std::left << std::setw(16) << names_[i] << std::setw(22) << layers_[i]->Describe()
        << std::setw(18) << ShapeToString(shapes_[i + 1]) << std::right << std::setw(12)
        << counts[i] << "\n";
  }
  out << "total parameters: " << arena_.size() << " (" << arena_.size() * sizeof(T)
      << " bytes); forward FLOPs per sample: " << FlopsPerSample() << "\n";
  return out.str();
}

std::vector<LayerInfo> DescribeLayers(const std::string& spec, const Shape& input_shape,
                                      const ModelOptions& options) {
  const std::vector<std::string> tokens = SplitModelSpec(PresetSpec(Trim(spec), input_shape));
  const TensorParallel& tp = options.tensor_parallel;
  CheckTensorParallelOptions<float>(tp);
  std::vector<LayerInfo> out;
  Arena<float> arena;  // declared into, never allocated
  Shape shape = input_shape;
  bool split = false;  // as in the constructor: the activation is a way's slice
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto layer = MakeLayerFromSpec<float>(tokens[i], input_shape, options);
    std::ostringstream name;
    name << std::setw(2) << std::setfill('0') << i << '_' << layer->kind();
    const TpRole role = layer->tp_role();
    CheckTensorSplit(role, split, name.str(), tokens[i], ShapeToString(shape), tp.ways);
    BuildContext<float> ctx{.arena = &arena,
                            .layer_index = static_cast<int>(i),
                            .layer_name = name.str(),
                            .tp = &tp,
                            .input_split = split,
                            .remote_tables = options.remote_tables};
    const int declared = arena.num_params();
    const Shape in = BuildShapeFor(*layer, tokens[i], i, tokens.size(), shape, input_shape);
    const Shape before = shape;
    try {
      shape = layer->Build(in, ctx);
    } catch (const Error& e) {
      if (e.context().key == kTensorParallelKey) throw;
      throw Error(ErrorCode::kInvalidArgument,
                  "layer " + name.str() + " ('" + tokens[i] + "'): " + e.what(), {.key = "model"});
    }
    if (layer->kind() == "wide") CheckWideOutput(tokens[i], shape, before);
    split = role == TpRole::kColumn || (role == TpRole::kSliceWise && split);
    LayerInfo info{.name = name.str(), .output_shape = shape};
    for (int id = declared; id < arena.num_params(); ++id) {
      info.parameters += arena.spec(id).size;
      info.params.emplace_back(arena.spec(id).FullName(), arena.spec(id).FullShape());
    }
    info.flops_per_sample = layer->FlopsPerSample();
    out.push_back(std::move(info));
  }
  if (split) {
    CheckTensorSplit(TpRole::kReplicated, split, "output", "the model's output",
                     ShapeToString(shape), tp.ways);
  }
  return out;
}

template class Sequential<float>;
template class Sequential<double>;
template std::unique_ptr<Layer<float>> MakeLayerFromSpec<float>(const std::string&, const Shape&,
                                                                const ModelOptions&);
template std::unique_ptr<Layer<double>> MakeLayerFromSpec<double>(const std::string&, const Shape&,
                                                                  const ModelOptions&);

}  // namespace shardflow
