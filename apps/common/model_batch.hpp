// The model's view of a pipeline batch, shared by the apps that run models (train, predict,
// serve).
//
// Turns a pipeline batch into the model's input and target tensors.
//
//   input:  the batch's `input_feature`, (B, ...) of uint8 or float32 with input_shape's
//           element count per row; uint8 is cast to float32 and multiplied by `scale`;
//           float32 is used as it is (`scale` is for integer pixels, never applied to floats);
//           int64/int32 (token ids of a tokenized input) become float32 exactly (|v| < 2^24).
//   labels: the batch's `label_feature`, (B) or (B, 1) of an integer dtype (classify only).
// Errors name the feature, what was expected and what was found, and the batch's first record.
#pragma once

#include <string>

#include "core/tensor.hpp"
#include "io/pipeline/element.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::apps {

// What the model learns: classify (softmax cross-entropy on integer labels) or reconstruct
// (mean squared error to its own input).
enum class Task { kClassify, kReconstruct };

struct BatchSpec {
  std::string input_feature;
  std::string label_feature;  // "" : no labels (reconstruction)
  Shape input_shape;          // per sample
  double scale = 1.0;         // uint8 inputs only
  // A token-sequence input (input_shape {T}) may come as (B, T' <= T): a batch padded to its
  // longest (io/pipeline/text_input.hpp pad_to = batch | bucket).
  bool shorter_sequences = false;
};

struct ModelBatch {
  Tensor x;       // float32 (B, input_shape...)
  Tensor labels;  // (B) integer, a sequence model's (B, S...), or empty
  int64_t rows = 0;
};

// `scratch` is reused between calls for the float conversion (it grows as needed).
ModelBatch ToModelBatch(const pipeline::Element& batch, const BatchSpec& spec, Tensor* scratch);

// A check of one decoded example (pipeline::InputSpec::check_example): its integer
// `label_feature` values lie in [0, classes). Throws Error(kInvalidArgument) naming the label,
// the example's file and record, and the feature; an example without the feature passes (the
// batch conversion names a missing one).
pipeline::MapFn LabelRangeCheck(const std::string& label_feature, int64_t classes);

// When `spec` assembles its input (io/pipeline/assemble.hpp) the model must read the assembled
// feature with an input_shape of its width: throws Error(kInvalidArgument) naming
// model.input_feature or model.input_shape, with the layout as the hint. Returns the layout
// ("" when nothing is assembled). Reads the statistics file.
std::string CheckAssembledInput(const pipeline::InputSpec& spec, const std::string& input_feature,
                                const Shape& input_shape);

// When `spec` tokenizes a document (io/pipeline/text_input.hpp) the model must read its tokens
// as they come: model.input_feature tokens and input_shape max_tokens, or, packed, input and
// pack. Error(kInvalidArgument) naming the key otherwise.
void CheckTokenizedInput(const pipeline::InputSpec& spec, const std::string& input_feature,
                         const Shape& input_shape);

}  // namespace shardflow::apps
