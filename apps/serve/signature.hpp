// The served model's signature (its one input and its outputs, as TensorFlow Serving's
// metadata describes them) and the per-instance results computed from the model's output.
//
// The input is the training config's input feature: its dtype is the feature's in [data]
// (uint8 when the format has no feature list, as idx and images), its shape the model's
// input_shape. Instances reach the model through apps::ToModelBatch, the conversion training
// and shardflow-predict use (uint8 times model.input_scale; float32 as it is).
// A text input ([data] tokenizer, io/pipeline/text_input.hpp) is served as strings: the input
// is named by the document feature (data.text_feature, "text"; DT_STRING in the metadata), and
// each instance, a JSON string or {"b64": bytes}, is tokenized here by the training's tokenizer
// into a row of max_tokens ids (float32, padded with the pad id), a longer text cut or refused
// as data.too_long says.
// Outputs: classify gives "classes" (int64, the argmax) and "probabilities" (float32 [K], the
// softmax, computed as shardflow-predict computes it); reconstruct gives "error" (float32, the
// mean squared error between the reconstruction and the input).
// Thread-safety: immutable after MakeSignature; the functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "apps/common/experiment_config.hpp"
#include "core/tensor.hpp"
#include "io/text/tokenizer.hpp"

namespace shardflow::serve {

struct Signature {
  std::string input_name;
  DType dtype = DType::kUInt8;  // kUInt8 or kFloat32
  Shape shape;                  // per instance
  apps::BatchSpec batch;        // the model's view of a batch of the input
  apps::Task task = apps::Task::kClassify;
  int64_t output_width = 0;  // values per instance of the model's output (classify: K)
  // A text input: its tokenizer (null otherwise), the ids per row, and too_long = fail.
  std::shared_ptr<const text::Tokenizer> tokenizer;
  int64_t max_tokens = 0;
  bool fail_too_long = false;

  int64_t row_elements() const { return NumElements(shape); }
  size_t row_bytes() const { return static_cast<size_t>(row_elements()) * DTypeSize(dtype); }
};

// Throws Error(kInvalidArgument) naming model.input_feature when its dtype is neither uint8
// nor float32 (a text input: when the model does not read its tokens as training did).
Signature MakeSignature(const apps::ExperimentConfig& config, const apps::ModelSetup& setup,
                        const Shape& output_shape);

// What one batch gives each of its instances, row i: classify: classes[i] and
// values[i*K .. (i+1)*K) the probabilities; reconstruct: values[i] the error.
struct BatchResults {
  std::vector<int64_t> classes;
  std::vector<float> values;
};

// Computes the results of a forward pass: `x` the model's float input (B, ...), `y` its output.
BatchResults ComputeResults(const Signature& sig, const Tensor& x, const Tensor& y);

}  // namespace shardflow::serve
