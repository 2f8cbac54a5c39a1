#include "apps/serve/signature.hpp"

#include "apps/predict/predictor.hpp"
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
          predict::SoftmaxRow(out + i * width, width, r.values.data() + i * width);
    }
    return r;
  }
  // Reconstruct: as shardflow-predict's per-record error (double sums, stored as float32).
  const float* in = x.data<float>();
  r.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < width; ++j) {
      const double d = static_cast<double>(out[i * width + j]) - in[i * width + j];
      sum += d * d;
    }
    r.values[static_cast<size_t>(i)] =
        static_cast<float>(width > 0 ? sum / static_cast<double>(width) : 0.0);
  }
  return r;
}

}  // namespace shardflow::serve
