#include "apps/serve/signature.hpp"

#include "apps/common/prediction/record_outputs.hpp"
#include "core/error.hpp"
#include "io/pipeline/feature_spec.hpp"

namespace shardflow::serve {

Signature MakeSignature(const apps::ExperimentConfig& config, const apps::ModelSetup& setup,
                        const Shape& output_shape) {
  Signature sig;
  sig.input_name = setup.input_feature;
  sig.shape = setup.input_shape;
  sig.batch = setup.batch_spec();
  sig.batch.label_feature.clear();  // requests carry no labels
  sig.task = setup.task;
  sig.output_width = NumElements(output_shape);
  for (const std::string& text : config.data.features) {
    const io::FeatureSpec spec = pipeline::ParseFeatureSpec(text, "data.features");
    if (spec.name == sig.input_name) sig.dtype = spec.dtype;
  }
  const pipeline::TextInputOptions& text = config.data.text;
  if (text.enabled()) {
    apps::CheckTokenizedInput(config.data, setup.input_feature, setup.input_shape);
    sig.tokenizer = pipeline::MakeInputTokenizer(text, "data");
    sig.max_tokens = text.max_tokens;
    sig.fail_too_long = text.too_long == "fail";
    sig.input_name = pipeline::DocumentFeature(text, config.data.data.format);
    sig.batch.input_feature = sig.input_name;  // the rows are the ids already
    sig.dtype = DType::kFloat32;
  }
  if (sig.dtype != DType::kUInt8 && sig.dtype != DType::kFloat32) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("the input feature is ") + DTypeName(sig.dtype) +
                    ", shardflow-serve takes uint8 or float32 inputs",
                {.key = "model.input_feature"});
  }
  return sig;
}

BatchResults ComputeResults(const Signature& sig, const Tensor& x, const Tensor& y) {
  BatchResults r;
  const int64_t n = x.dim(0);
  const int64_t width = sig.output_width;
  const float* out = y.data<float>();
  if (sig.task == apps::Task::kClassify) {
    r.classes.resize(static_cast<size_t>(n));
    r.values.resize(static_cast<size_t>(n * width));
    for (int64_t i = 0; i < n; ++i) {
      r.classes[static_cast<size_t>(i)] =
          apps::SoftmaxRow(out + i * width, width, r.values.data() + i * width);
    }
    return r;
  }
  // Reconstruct: shardflow-predict's per-record error (summed in double, stored as float32).
  const float* in = x.data<float>();
  r.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    r.values[static_cast<size_t>(i)] =
        static_cast<float>(apps::ReconstructionError(out + i * width, in + i * width, width));
  }
  return r;
}

}  // namespace shardflow::serve
